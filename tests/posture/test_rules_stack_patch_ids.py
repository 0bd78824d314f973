"""STACK-001, STACK-002 and STACK-003 each own their components' bulletin exposures, by id: a
toolkit exposure is STACK-002 only, a device plugin's STACK-003 only, and a clean node is none."""

from __future__ import annotations

from dataclasses import replace

import pytest

from posture.rules import CHECKS
from tests.posture.builders import gpu_node, inputs, pod, run, tenant

ALPHA = tenant("alpha", namespaces=("alpha",))
STACK_IDS = ("STACK-001", "STACK-002", "STACK-003")


def exposure(component: str, installed: str, fixed: str, severity: str = "high") -> dict:
    return {
        "component": component,
        "installed": installed,
        "fixed_version": fixed,
        "severity": severity,
        "cves": ["CVE-2025-23266"],
        "bulletin": "demo-5659",
        "released": "2026-07-15T00:00:00+00:00",
    }


def world(*exposures: dict):
    base = inputs(
        nodes=(gpu_node("gpu-1"),),
        pods=(pod("alpha", "trainer", node="gpu-1", gpu={"nvidia.com/gpu": 1}),),
        tenants=(ALPHA,),
    )
    return replace(base, patch={"gpu-1": {"exposures": list(exposures)}} if exposures else {})


@pytest.mark.parametrize(
    ("component", "owner"),
    [
        ("driver", "STACK-001"),
        ("container_toolkit", "STACK-002"),
        ("device_plugin", "STACK-003"),
        ("gpu_operator", "STACK-003"),
        ("dcgm_exporter", "STACK-003"),
        ("mig_manager", "STACK-003"),
    ],
)
def test_each_component_belongs_to_one_stack_check(component, owner):
    found = {check: run(check, world(exposure(component, "1.0.0", "1.0.1"))) for check in STACK_IDS}
    assert [c for c, drafts in found.items() if drafts] == [owner]
    (draft,) = found[owner]
    assert draft.subject_name == "gpu-1"
    assert draft.tenants == ("alpha",)
    assert draft.evidence["move_to"] == "1.0.1"
    assert draft.evidence["cves"] == ["CVE-2025-23266"]


def test_a_node_without_exposures_raises_none_of_them():
    assert all(run(check, world()) == [] for check in STACK_IDS)


def test_stack002_takes_the_worst_severity_of_its_exposures():
    drafts = run(
        "STACK-002",
        world(
            exposure("container_toolkit", "1.16.1", "1.16.2", "medium"),
            exposure("container_toolkit", "1.16.1", "1.17.8", "critical"),
        ),
    )
    (draft,) = drafts
    assert draft.severity == "critical"
    assert draft.evidence["move_to"] == "1.17.8"


def test_stack002_and_stack003_are_registered_with_their_mappings():
    assert "ATT&CK:T1611" in CHECKS["STACK-002"].mappings
    assert "SP800-53:SI-2" in CHECKS["STACK-003"].mappings


def aks_world(*exposures: dict):
    """gpu-1 with a pre-installed driver (the Operator's label) and the Operator's toolkit."""
    from inventory.snapshot import Container, GpuOperatorPolicy, Pod

    toolkit = Pod(
        namespace="gpu-operator",
        name="nvidia-container-toolkit-daemonset-x1",
        node_name="gpu-1",
        phase="Running",
        containers=(Container("main", "nvcr.io/nvidia/k8s/container-toolkit:v1.17.0"),),
        owner_kind="DaemonSet",
        owner_name="nvidia-container-toolkit-daemonset",
    )
    node = gpu_node(
        "gpu-1",
        labels={"nvidia.com/gpu.deploy.driver": "pre-installed"},
        deployed={"gpu_operator": "Deployment gpu-operator/gpu-operator"},
    )
    base = inputs(
        nodes=(node,),
        pods=(pod("alpha", "trainer", node="gpu-1", gpu={"nvidia.com/gpu": 1}), toolkit),
        tenants=(ALPHA,),
        gpu_operator_policies=(GpuOperatorPolicy("cluster-policy", spec={}),),
    )
    return replace(base, patch={"gpu-1": {"exposures": list(exposures)}})


def test_a_pre_installed_driver_says_how_it_is_upgraded_and_keeps_its_findings_key():
    (draft,) = run("STACK-001", aks_world(exposure("driver", "550.127.05", "550.163.01")))
    assert draft.key == "STACK-001"
    assert draft.evidence["upgrade_by"]["managed_by"] == "pre_installed"
    assert "ClusterPolicy" not in draft.evidence["upgrade_by"]["how"]


def test_an_sla_breach_needing_two_changes_is_two_findings():
    """The driver (a new node image) and the toolkit (the GPU Operator) are two changes, often
    by two owners: one finding each, so each action closes what it fixes."""
    world = aks_world(
        exposure("driver", "550.127.05", "550.163.01"),
        exposure("container_toolkit", "1.17.0", "1.17.8"),
    )
    world = replace(world, patch_sla_days={"high": 30})
    drafts = run("STACK-005", world)
    by_change = {d.evidence["upgrade_by"]["change"]: d for d in drafts}
    assert set(by_change) == {"host", "gpu_operator"}
    assert [e["component"] for e in by_change["host"].evidence["late_exposures"]] == ["driver"]
    # The Operator's part keeps the finding's key (its history, any acceptance).
    assert by_change["gpu_operator"].key == "STACK-005"
    assert by_change["host"].key == "STACK-005 host"
    assert by_change["host"].title.endswith("(pre-installed on the node)")


def operator_driver_world(asked: str, *exposures: dict):
    """gpu-1's driver is the Operator's pod; the ClusterPolicy asks for driver `asked`."""
    from dataclasses import asdict

    from inventory.snapshot import Container, GpuOperatorPolicy, Pod
    from inventory.sources.gpu_operator import parse_cluster_policy

    driver = Pod(
        namespace="gpu-operator",
        name="nvidia-driver-daemonset-x1",
        node_name="gpu-1",
        phase="Running",
        containers=(Container("main", "nvcr.io/nvidia/driver:580.126.09-ubuntu22.04"),),
        owner_kind="DaemonSet",
        owner_name="nvidia-driver-daemonset",
    )
    spec = asdict(parse_cluster_policy({"spec": {"driver": {"version": asked}}}))
    node = gpu_node("gpu-1", deployed={"gpu_operator": "Deployment gpu-operator/gpu-operator"})
    base = inputs(
        nodes=(node,),
        pods=(pod("alpha", "trainer", node="gpu-1", gpu={"nvidia.com/gpu": 1}), driver),
        tenants=(ALPHA,),
        gpu_operator_policies=(GpuOperatorPolicy("cluster-policy", spec=spec),),
    )
    return replace(base, patch={"gpu-1": {"exposures": list(exposures)}})


def test_a_driver_the_clusterpolicy_already_asks_for_says_to_finish_the_rollout():
    below = exposure("driver", "580.126.09", "580.159.03")
    (draft,) = run("STACK-001", operator_driver_world("580.159.03", below))
    by = draft.evidence["upgrade_by"]
    assert (draft.key, by["change"]) == ("STACK-001", "gpu_operator")
    assert by["rollout_pending"] == {"driver": "580.159.03"}
    assert by["how"].startswith("the ClusterPolicy already asks for driver 580.159.03")
    assert "delete its driver pod" in by["how"]
    # Asking for a version below the fix: the version is still to set.
    (draft,) = run("STACK-001", operator_driver_world("580.126.09", below))
    assert "rollout_pending" not in draft.evidence["upgrade_by"]
    assert "set the component's version" in draft.evidence["upgrade_by"]["how"]
