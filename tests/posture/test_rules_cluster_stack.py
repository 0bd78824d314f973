"""K8S-001, K8S-002 and STACK-004 over hand-built read models."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest

from inventory.snapshot import (
    Container,
    Node,
    ResourceQuota,
    SharingConfig,
    Taint,
    UnreadableConfig,
    Volume,
)
from inventory.sources.pods import pod_from_object
from posture.rules import CHECKS, run_checks
from posture.rules.k8s.quota import enforces_a_gpu_key, enforcing_keys, is_gpu_quota_key
from tests.posture.builders import gpu_node, inputs, pod, run, tenant

ALPHA, BETA = tenant("alpha"), tenant("beta", "external")

# --- K8S-001 ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "counts"),
    [
        ("requests.nvidia.com/gpu", True),
        ("nvidia.com/gpu", True),
        ("limits.nvidia.com/gpu", True),
        ("requests.nvidia.com/gpu.shared", True),
        ("requests.nvidia.com/mig-1g.10gb", True),
        ("requests.nvidia.com/mig-3g.40gb", True),
        ("requests.cpu", False),
        ("limits.memory", False),
        ("count/pods", False),
        # HAMi's GPU memory: a quota on it bounds a GPU resource (it used not to count).
        ("requests.nvidia.com/gpumem", True),
        ("requests.nvidia.com/gpu-ts", True),
        ("requests.amd.com/gpu", False),
        # The Network Operator's NICs share the prefix: a quota on them bounds no GPU.
        ("requests.nvidia.com/hostdev", False),
        ("requests.nvidia.com/rdma_shared_device_a", False),
    ],
)
def test_gpu_quota_keys(key, counts):
    assert is_gpu_quota_key(key) is counts


@pytest.mark.parametrize(
    ("key", "enforced"),
    [
        ("requests.nvidia.com/gpu", True),
        ("requests.nvidia.com/mig-1g.10gb", True),
        # Accepted by the API server, never counted for an extended resource.
        ("nvidia.com/gpu", False),
        ("limits.nvidia.com/gpu", False),
        # HAMi's scheduler counts its own resources under limits. too.
        ("limits.nvidia.com/gpumem", True),
        ("gpu.nvidia.com.deviceclass.resource.k8s.io/devices", True),
        ("requests.cpu", False),
        ("count/pods", False),
        ("requests.nvidia.com/sriov_rdma_vf", False),
        # Other vendors' GPUs are extended resources too: counted under requests. only.
        ("requests.amd.com/gpu", True),
        ("requests.habana.ai/gaudi", True),
        ("amd.com/gpu", False),
        ("limits.habana.ai/gaudi", False),
    ],
)
def test_enforced_gpu_quota_keys(key, enforced):
    assert enforces_a_gpu_key(key) is enforced


GPU_KEY = "requests.nvidia.com/gpu"
PRIORITY_HIGH = {"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}


def scoped(name, *selector, scopes=()):
    return ResourceQuota("alpha", name, {GPU_KEY: "4"}, tuple(scopes), tuple(selector))


@pytest.mark.parametrize(
    ("quotas", "fires"),
    [
        ((), True),
        ((ResourceQuota("alpha", "compute", {"requests.cpu": "10"}),), True),
        ((ResourceQuota("other", "gpu", {"requests.nvidia.com/gpu": "4"}),), True),
        ((ResourceQuota("alpha", "gpu", {"requests.nvidia.com/gpu": "4"}),), False),
        ((ResourceQuota("alpha", "mig", {"requests.nvidia.com/mig-1g.10gb": "2"}),), False),
        # Scoped quotas count only the pods in scope, which the tenant chooses.
        ((scoped("gpu", PRIORITY_HIGH),), True),
        ((scoped("gpu", scopes=("Terminating",)),), True),
        ((scoped("gpu", scopes=("NotBestEffort",)),), True),  # a GPU-only pod is BestEffort
        ((scoped("a", scopes=("Terminating",)), scoped("b", scopes=("NotTerminating",))), False),
        ((scoped("a", PRIORITY_HIGH), scoped("b", {**PRIORITY_HIGH, "operator": "NotIn"})), False),
        ((scoped("gpu", PRIORITY_HIGH), ResourceQuota("alpha", "all", {GPU_KEY: "8"})), False),
        # Keys the API accepts and never enforces for an extended resource bound nothing.
        ((ResourceQuota("alpha", "gpu", {"limits.nvidia.com/gpu": "4"}),), True),
        ((ResourceQuota("alpha", "gpu", {"nvidia.com/gpu": "4"}),), True),
        (
            (
                ResourceQuota("alpha", "compute", {"requests.cpu": "10"}),
                ResourceQuota("alpha", "gpu", {"requests.nvidia.com/gpu": "0"}),
            ),
            False,
        ),
    ],
)
def test_k8s001(quotas, fires):
    found = run("K8S-001", inputs(tenants=(ALPHA,), quotas=quotas))
    assert bool(found) is fires


def test_k8s001_gpu_pods_outside_a_scoped_quota_are_unbounded():
    world = inputs(
        pods=(pod("alpha", gpu={"nvidia.com/gpu": 1}),),
        tenants=(ALPHA,),
        quotas=(scoped("gpu-high", PRIORITY_HIGH),),
    )
    (draft,) = run("K8S-001", world)
    (missing,) = draft.evidence["missing"]
    assert missing["not_counted"] == "without a priority class"
    assert draft.evidence["quotas"][0]["scope_selector"] == [PRIORITY_HIGH]
    assert "scoped quotas do not count pods without a priority class" in draft.title


def _gpu_pod(name, **spec):
    """A running GPU pod of alpha as the API gives it, with `spec` fields added."""
    container = {"name": "main", "image": "trainer:1", **spec.pop("container", {})}
    container.setdefault("resources", {}).setdefault("limits", {})["nvidia.com/gpu"] = "1"
    obj = {
        "metadata": {"name": name, "namespace": "alpha"},
        "spec": {"nodeName": "gpu-1", "containers": [container], **spec},
        "status": {"phase": "Running"},
    }
    return pod_from_object(obj, "alpha")


def test_k8s001_scoped_quota_evidence_says_which_gpu_pods_it_counts():
    # A NotBestEffort quota counts the pod asking for CPU, not the GPU-only (BestEffort) one.
    counted = _gpu_pod("with-cpu", container={"resources": {"requests": {"cpu": "500m"}}})
    world = inputs(
        pods=(_gpu_pod("gpu-only"), counted),
        tenants=(ALPHA,),
        quotas=(scoped("gpu", scopes=("NotBestEffort",)),),
    )
    (draft,) = run("K8S-001", world)
    (missing,) = draft.evidence["missing"]
    assert missing["not_counted"] == "of QoS BestEffort"
    assert missing["pods"] == ["alpha/gpu-only", "alpha/with-cpu"]  # kept as before
    assert missing["pods_not_counted"] == ["alpha/gpu-only"]
    assert missing["pods_counted"] == ["alpha/with-cpu"]
    assert "pods_scope_unknown" not in missing


@pytest.mark.parametrize(
    ("quota", "spec", "counted"),
    [
        (scoped("gpu", scopes=("Terminating",)), {"activeDeadlineSeconds": 3600}, True),
        (scoped("gpu", scopes=("Terminating",)), {}, False),
        (scoped("gpu", PRIORITY_HIGH), {"priorityClassName": "high"}, True),
        (scoped("gpu", PRIORITY_HIGH), {"priorityClassName": "low"}, False),
        (
            scoped("gpu", scopes=("CrossNamespacePodAffinity",)),
            {
                "affinity": {
                    "podAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [
                            {"topologyKey": "zone", "namespaceSelector": {}}
                        ]
                    }
                }
            },
            True,
        ),
    ],
)
def test_k8s001_scoped_quota_evidence_reads_each_scope_from_the_pod(quota, spec, counted):
    world = inputs(pods=(_gpu_pod("p", **spec),), tenants=(ALPHA,), quotas=(quota,))
    (draft,) = run("K8S-001", world)
    (missing,) = draft.evidence["missing"]
    assert missing[("pods_counted" if counted else "pods_not_counted")] == ["alpha/p"]


def test_k8s001_scoped_quota_evidence_says_when_a_pods_scope_was_not_read():
    world = inputs(
        pods=(pod("alpha", gpu={"nvidia.com/gpu": 1}),),  # no scope facts, as stored before
        tenants=(ALPHA,),
        quotas=(scoped("gpu", scopes=("NotBestEffort",)),),
    )
    (draft,) = run("K8S-001", world)
    (missing,) = draft.evidence["missing"]
    assert missing["pods_scope_unknown"] == missing["pods"]
    assert missing["pods_counted"] == missing["pods_not_counted"] == []


def test_k8s001_evidence_lists_the_quotas_seen():
    world = inputs(
        tenants=(ALPHA,), quotas=(ResourceQuota("alpha", "compute", {"requests.cpu": "1"}),)
    )
    (draft,) = run("K8S-001", world)
    assert (draft.tenants, draft.subject_kind, draft.subject_name) == (
        ("alpha",),
        "Namespace",
        "alpha",
    )
    assert draft.evidence["quotas"] == [{"name": "compute", "hard_keys": ["requests.cpu"]}]


def test_k8s001_only_tenant_namespaces_present_in_the_snapshot():
    # kube-system is nobody's; "alpha-old" is listed on the tenant but absent from the cluster.
    owner = tenant("alpha", namespaces=("alpha", "alpha-old"))
    world = inputs(tenants=(owner,), namespaces=("alpha", "kube-system"))
    assert [d.subject_name for d in run("K8S-001", world)] == ["alpha"]


# --- K8S-002 ----------------------------------------------------------------------------------

GENERIC = Taint("nvidia.com/gpu", "present", "NoSchedule")


@pytest.mark.parametrize(
    ("taints", "fires"),
    [
        ((), True),
        ((GENERIC,), True),
        ((Taint("pool", "external", "PreferNoSchedule"),), True),
        ((GENERIC, Taint("gpuposture.io/trust-class", "external", "NoSchedule")), False),
        # Strict but unrelated: names no class by a configured key or a class's own taint.
        ((Taint("dedicated", "tenant-b", "NoExecute"),), True),
    ],
)
def test_k8s002(taints, fires):
    world = inputs(nodes=(gpu_node(taints=taints),), pods=(pod("alpha"),), tenants=(ALPHA,))
    assert bool(run("K8S-002", world)) is fires


def test_k8s002_one_finding_per_node_for_every_tenant_on_it_with_classes():
    world = inputs(
        nodes=(gpu_node(taints=(GENERIC,)),),
        pods=(pod("alpha"), pod("beta"), pod("kube-system"), pod("beta", "done", phase="Failed")),
        tenants=(ALPHA, BETA),
    )
    (draft,) = run("K8S-002", world)
    assert draft.tenants == ("alpha", "beta")
    assert (draft.subject_kind, draft.subject_name, draft.exposure) == ("Node", "gpu-1", 4)
    evidence = draft.evidence
    assert evidence["taints"] == ["nvidia.com/gpu=present:NoSchedule"]
    assert evidence["tenants_on_node"] == [
        {"tenant": "alpha", "trust_class": "internal"},
        {"tenant": "beta", "trust_class": "external"},
    ]


def test_k8s002_unattributed_when_no_tenant_runs_there_and_cpu_nodes_ignored():
    world = inputs(nodes=(gpu_node(taints=()), Node("cpu-1")), pods=(pod("kube-system"),))
    (draft,) = run("K8S-002", world)
    assert (draft.tenants, draft.subject_name) == ((), "gpu-1")


# --- STACK-004 --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("missing", "fires"),
    [
        ((), False),
        (("driver_version",), True),
        (("container_toolkit_version",), True),
        (("device_plugin_version",), True),
        # Firmware is coverage: never visible through the API, not a finding by itself.
        (("firmware_version",), False),
        (("driver_version", "firmware_version"), True),
    ],
)
def test_stack004(missing, fires):
    node = gpu_node(**dict.fromkeys(missing))
    found = run("STACK-004", inputs(nodes=(node,), pods=(pod("alpha"),), tenants=(ALPHA,)))
    assert bool(found) is fires
    if fires:
        reported = [m for m in missing if m != "firmware_version"]
        assert found[0].evidence["unknown"] == reported
        assert set(found[0].evidence["known"]).isdisjoint(missing)
        assert len(found[0].evidence["known"]) == 4 - len(missing)  # firmware is listed if known


def test_stack004_evidence_values_and_attribution():
    node = gpu_node(firmware_version=None, device_plugin_version=None)
    world = inputs(nodes=(node,), pods=(pod("alpha"), pod("beta")), tenants=(ALPHA, BETA))
    (found,) = run("STACK-004", world)
    assert found.tenants == ("alpha", "beta")
    evidence = found.evidence
    assert evidence["known"] == {
        "driver_version": "550.90.07",
        "container_toolkit_version": "1.16.1",
    }
    assert evidence["unknown"] == ["device_plugin_version"]
    assert found.subject_kind == "Node"


def test_stack004_non_gpu_nodes_and_unattributed():
    world = inputs(nodes=(Node("cpu-1"), gpu_node("gpu-2", driver_version=None)))
    (draft,) = run("STACK-004", world)
    assert (draft.tenants, draft.subject_name) == ((), "gpu-2")


def test_stack004_a_component_not_installed_is_not_unknown():
    """A device plugin the snapshot shows absent (no pod, no DaemonSet scheduling there) is
    not installed: not reported. One whose DaemonSet should run there but has no pod is."""
    absent = gpu_node(device_plugin_version=None, not_installed={"device_plugin": "no pod"})
    assert run("STACK-004", inputs(nodes=(absent,))) == []
    missing = gpu_node(
        dcgm_exporter_version=None,
        deployed={"dcgm_exporter": "DaemonSet gpu-operator/nvidia-dcgm-exporter should run a pod"},
    )
    (draft,) = run("STACK-004", inputs(nodes=(missing,)))
    assert draft.evidence["unknown"] == ["dcgm_exporter_version"]
    assert "should run" in draft.evidence["deployed"]["dcgm_exporter_version"]


def test_stack004_firmware_only_where_a_bulletin_names_it_for_the_model():
    node = gpu_node(firmware_version=None)
    named = {"gpu-1": {"status": "unknown", "unknown_components": ["firmware"]}}
    (draft,) = run("STACK-004", replace(inputs(nodes=(node,)), patch=named))
    assert draft.evidence["unknown"] == ["firmware_version"]
    other = {"gpu-1": {"status": "current", "unknown_components": []}}
    assert run("STACK-004", replace(inputs(nodes=(node,)), patch=other)) == []


# --- STACK-007 --------------------------------------------------------------------------------

UNREADABLE = UnreadableConfig(
    "ConfigMap",
    "gpu-operator",
    "time-slicing-config",
    "ts-4",
    "device_plugin",
    "nested deeper than 64 levels (line 2)",
)


def test_stack007_names_the_config_and_the_error_once_for_every_tenant_on_the_node():
    node = gpu_node(sharing_strategy="unknown", unreadable_configs=(UNREADABLE,))
    world = inputs(
        nodes=(node, gpu_node("gpu-2")), pods=(pod("alpha"), pod("beta")), tenants=(ALPHA, BETA)
    )
    (draft,) = run("STACK-007", world)
    assert draft.tenants == ("alpha", "beta")
    assert (draft.subject_kind, draft.subject_name) == ("Node", "gpu-1")
    assert draft.evidence["unreadable"] == [
        {
            "object": "ConfigMap gpu-operator/time-slicing-config",
            "key": "ts-4",
            "purpose": "device_plugin",
            "error": "nested deeper than 64 levels (line 2)",
        }
    ]
    assert draft.evidence["node_sharing_strategy"] == "unknown"
    assert "ConfigMap gpu-operator/time-slicing-config" in draft.title


def test_stack007_quiet_when_everything_was_read():
    assert run("STACK-007", inputs(nodes=(gpu_node(),), pods=(pod("alpha"),))) == []


# --- the catalogue as a whole -----------------------------------------------------------------

OWNED = ("K8S-001", "K8S-002", "POD-001", "POD-002", "POD-003", "POD-004", "POD-005")
OWNED += ("SHARE-001", "SHARE-003", "SHARE-005", "STACK-004")
# Issue 4's checks meet the same metadata bar.
LATER = ("POD-006", "POD-007", "POD-008", "POD-009", "POD-010", "POD-011", "SHARE-002")
LATER += ("SHARE-006", "SHARE-007", "SHARE-008", "LEAK-002", "STACK-006", "ATTR-002")
LATER += ("K8S-003", "K8S-004", "K8S-005", "K8S-006", "K8S-007", "STACK-007")
# Issue 17 item 12 and 14.
LATER += ("K8S-008", "DRIFT-006")


# One key per framework, as the frameworks page groups them (CSF 2.0 spelled one way only).
FRAMEWORKS = ("SP800-53", "CSF 2.0", "ATT&CK", "NVIDIA-AI-Cloud")


def test_catalogue_metadata():
    assert set(OWNED + LATER) <= set(CHECKS)
    for check_id, c in CHECKS.items():  # every registered check, new ones included
        assert c.rationale and c.remediation and c.title, check_id
        assert c.mappings, check_id
        for mapping in c.mappings:
            framework, _, control = mapping.partition(":")
            assert framework in FRAMEWORKS and re.fullmatch(r"[\w.()-]+", control), mapping


def test_every_draft_is_json_ready_and_well_formed():
    ext = tenant("ext", "external")
    bad = pod(
        "ext",
        "bad",
        host_pid=True,
        volumes=(Volume("root", "/", "hostPath"),),
        containers=(
            Container(
                "c",
                "img",
                privileged=True,
                capabilities_add=("SYS_ADMIN",),
                gpu_limits={"nvidia.com/gpu": "1"},
            ),
        ),
    )
    world = inputs(
        nodes=(
            gpu_node(
                taints=(),
                sharing_strategy="time_slicing",
                gpu_count=1,
                time_slicing_replicas=4,
                device_plugin_version=None,
            ),
        ),
        pods=(bad, pod("alpha", gpu={"nvidia.com/gpu": 1})),
        tenants=(ALPHA, ext),
        sharing_configs=(SharingConfig("gpu-operator", "cfg", "default", "time_slicing", 4),),
    )
    drafts = run_checks(world)
    assert {d.check_id for d in drafts} >= set(OWNED)
    for draft in drafts:
        json.dumps(draft.evidence)
        assert draft.severity in ("", "critical", "high", "medium", "low")
        assert set(draft.tenants) <= {"alpha", "ext"}
        assert draft.exposure >= 1


@pytest.mark.parametrize(
    ("resource", "keys"),
    [
        ("nvidia.com/gpu", ("requests.nvidia.com/gpu",)),
        # HAMi's scheduler enforces its counters under limits. too; Kubernetes does not, so
        # Volcano's and Aliyun's counters are bounded by requests. only.
        (
            "nvidia.com/gpumem",
            ("requests.nvidia.com/gpumem", "limits.nvidia.com/gpumem", "limit.nvidia.com/gpumem"),
        ),
        ("volcano.sh/vgpu-memory", ("requests.volcano.sh/vgpu-memory",)),
        ("aliyun.com/gpu-mem", ("requests.aliyun.com/gpu-mem",)),
    ],
)
def test_quota_keys_that_bound_a_resource(resource, keys):
    assert enforcing_keys(resource) == keys
