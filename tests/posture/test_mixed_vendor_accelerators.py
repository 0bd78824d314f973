"""A cluster with NVIDIA, AMD Instinct, Intel GPU and Gaudi nodes: the checks whose question does
not depend on the vendor (who owns a GPU pod, which pool it runs in, what bounds it, its egress,
admission and identity, its request against its limit) judge every vendor's GPUs; NVIDIA's
stack, sharing and telemetry checks stay on NVIDIA's nodes. Objects are written as
`kubectl get -o json` prints them (resource names as AMD's, Intel's and Habana's device plugins
advertise them) and read by the normaliser."""

from __future__ import annotations

import json
from typing import Any

import pytest

from inventory.snapshot.accelerators import is_judged_accelerator, is_other_accelerator
from posture.inputs import PostureInputs
from posture.rules.registry import run_checks
from tests.conftest import api_client
from tests.posture.builders import tenant
from tests.posture.gpu_access_world import container, namespace, node, pod, run, world

ALPHA, EXT = tenant("alpha", "internal"), tenant("ext", "external")
EXTERNAL_POOL = {"key": "gpuposture.io/trust-class", "value": "external", "effect": "NoSchedule"}
INTERNAL_POOL = {"key": "gpuposture.io/trust-class", "value": "internal", "effect": "NoSchedule"}
OTHER_NODES = ("mi300-a", "gaudi-a", "flex-a")


def vendor_node(name: str, capacity: dict[str, str], *taints: dict[str, str]) -> dict[str, Any]:
    """A node of another vendor's accelerators: its device plugin's capacity, no GFD label."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": {"taints": list(taints)},
        "status": {"capacity": {"cpu": "64", **capacity}, "allocatable": capacity},
    }


def nvidia_node() -> dict[str, Any]:
    found = node("h100-a", gpus=4, capacity={"nvidia.com/gpu": "4"})
    found["spec"]["taints"] = [INTERNAL_POOL]
    return found


def quota(ns: str, name: str, **hard: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"hard": dict(hard)},
    }


def deny_egress(ns: str) -> dict[str, Any]:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "deny-egress", "namespace": ns},
        "spec": {"podSelector": {}, "policyTypes": ["Egress"]},
    }


def gpu_pod(ns: str, name: str, node_name: str, **gpu: str) -> dict[str, Any]:
    return pod(ns, name, container(gpu=gpu, image="rocm/pytorch:rocm6.2"), node_name=node_name)


def objects(*more: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        nvidia_node(),
        vendor_node("mi300-a", {"amd.com/gpu": "8"}),
        vendor_node("gaudi-a", {"habana.ai/gaudi": "8"}),
        vendor_node("flex-a", {"gpu.intel.com/xe": "2"}, EXTERNAL_POOL),
        vendor_node("cpu-a", {"memory": "256Gi"}),
        namespace("alpha", **{"pod-security.kubernetes.io/enforce": "baseline"}),
        namespace("ext"),
        namespace("scratch"),
        quota("alpha", "nvidia", **{"requests.nvidia.com/gpu": "4"}),
        deny_egress("alpha"),
        gpu_pod("alpha", "train-0", "mi300-a", **{"amd.com/gpu": "1"}),
        gpu_pod("ext", "finetune-0", "mi300-a", **{"amd.com/gpu": "2"}),
        gpu_pod("ext", "render-0", "flex-a", **{"gpu.intel.com/xe": "1"}),
        gpu_pod("scratch", "notebook-0", "gaudi-a", **{"habana.ai/gaudi": "1"}),
        *more,
    ]


def mixed(*more: dict[str, Any]) -> PostureInputs:
    return world(objects(*more), (ALPHA, EXT))


def subjects(inputs: PostureInputs, check_id: str) -> set[str]:
    return {d.subject_name for d in run(check_id, inputs)}


def test_the_accelerator_resources_each_vendor_advertises():
    """AMD (whole GPUs, a partition under `mixed` naming, a VF or PF for a VM), Intel (by
    kernel driver, and the monitoring resource that reaches every GPU of the node) and Gaudi
    are judged; Neuron and TPUs are read, not judged; NVIDIA's and plain resources are not
    other vendors'."""
    for name in (
        "amd.com/gpu",
        "amd.com/cpx_nps4",
        "amd.com/spx_nps1",
        "amd.com/gpu_vf",
        "amd.com/gpu_pf",
        "gpu.intel.com/i915",
        "gpu.intel.com/xe",
        "gpu.intel.com/xe_monitoring",
        "habana.ai/gaudi",
    ):
        assert is_judged_accelerator(name) and is_other_accelerator(name), name
    for name in ("aws.amazon.com/neuron", "google.com/tpu"):
        assert is_other_accelerator(name) and not is_judged_accelerator(name), name
    for name in ("nvidia.com/gpu", "cpu", "amd.com/cpu", "gpu.intel.com/millicores"):
        assert not is_other_accelerator(name), name


def test_nodes_say_which_accelerators_they_hold_and_stay_no_nvidia_gpu_node():
    nodes = {n.name: n for n in mixed().snapshot.nodes}
    assert nodes["mi300-a"].accelerator_resources == {"amd.com/gpu": 8}
    assert nodes["gaudi-a"].accelerator_resources == {"habana.ai/gaudi": 8}
    for name in OTHER_NODES:
        assert nodes[name].is_accelerator_node and not nodes[name].is_gpu_node, name
        assert nodes[name].gpu_model is None and nodes[name].gpu_count is None, name
    assert nodes["h100-a"].is_accelerator_node and nodes["h100-a"].is_gpu_node
    assert not nodes["cpu-a"].is_accelerator_node and nodes["cpu-a"].accelerator_resources == {}


def test_an_unclaimed_namespace_holding_a_gaudi_is_a_gpu_workload_nobody_owns():
    (draft,) = run("TEN-001", mixed())
    assert (draft.subject_name, draft.tenants) == ("scratch", ("unclassified",))
    (entry,) = draft.evidence["gpu_pods"]
    assert entry["gpu_resources"] == {"habana.ai/gaudi": 1}


def test_an_external_tenant_on_an_untainted_amd_node_is_outside_its_pool():
    found = {d.subject_name: d for d in run("POD-009", mixed()) if d.tenants == ("ext",)}
    # finetune-0 runs on the untainted MI300X; render-0 inside the external pool (Intel).
    assert set(found) == {"finetune-0"}
    assert found["finetune-0"].evidence["gpu_resources"] == {"amd.com/gpu": 2}


def test_untainted_amd_and_gaudi_nodes_have_no_class_taint():
    drafts = {d.subject_name: d for d in run("K8S-002", mixed())}
    # h100-a and flex-a carry a class taint; cpu-a holds no accelerator.
    assert set(drafts) == {"mi300-a", "gaudi-a"}
    evidence = drafts["mi300-a"].evidence
    assert evidence["accelerator_resources"] == {"amd.com/gpu": 8}
    assert {t["tenant"] for t in evidence["tenants_on_node"]} == {"alpha", "ext"}


def test_the_quota_must_bound_every_vendors_gpus_the_tenant_uses_or_nodes_advertise():
    drafts = {d.subject_name: d for d in run("K8S-001", mixed())}
    missing = {m["resource"]: m for m in drafts["alpha"].evidence["missing"]}
    # Its quota bounds nvidia.com/gpu only: the AMD GPU it uses and the others nodes advertise
    # are unbounded.
    assert set(missing) == {"amd.com/gpu", "gpu.intel.com/xe", "habana.ai/gaudi"}
    assert missing["amd.com/gpu"]["in_use"] and missing["amd.com/gpu"]["pods"] == ["alpha/train-0"]
    assert missing["amd.com/gpu"]["expected_key"] == "requests.amd.com/gpu"
    bounded = quota(
        "alpha",
        "other-vendors",
        **{
            "requests.amd.com/gpu": "2",
            "requests.habana.ai/gaudi": "0",
            "requests.gpu.intel.com/xe": "0",
        },
    )
    assert "alpha" not in subjects(mixed(bounded), "K8S-001")


def test_egress_and_admission_count_a_tenant_using_only_other_vendors_gpus():
    inputs = mixed()
    # ext holds only AMD and Intel GPUs, with no egress policy and no PSA label.
    assert "ext" in subjects(inputs, "K8S-007") and "ext" in subjects(inputs, "K8S-009")
    assert "alpha" not in subjects(inputs, "K8S-007") | subjects(inputs, "K8S-009")


def test_an_amd_request_that_differs_from_its_limit_is_pod_006():
    mismatch = container(image="rocm/pytorch:rocm6.2")
    mismatch["resources"] = {"requests": {"amd.com/gpu": "1"}, "limits": {"amd.com/gpu": "2"}}
    (draft,) = run("POD-006", mixed(pod("alpha", "batch-0", mismatch, node_name="mi300-a")))
    (entry,) = draft.evidence["containers"]
    (found,) = entry["mismatches"]
    assert (found["resource"], found["request"], found["limit"]) == ("amd.com/gpu", "1", "2")
    assert entry["requests"] == {"amd.com/gpu": "1"}


def test_a_shared_service_account_running_two_tenants_amd_jobs_is_pod_010():
    shared = [
        pod(
            "scratch",
            f"job-{slug}",
            container(gpu={"amd.com/gpu": "1"}, image="rocm/pytorch:rocm6.2"),
            node_name="mi300-a",
            labels={"gpuposture.io/tenant": slug},
            serviceAccountName="runner",
        )
        for slug in ("alpha", "ext")
    ]
    account = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": "runner", "namespace": "scratch"},
    }
    drafts = run("POD-010", mixed(*shared, account))
    assert {d.subject_name for d in drafts} == {"runner"}
    assert set(drafts[0].tenants) >= {"alpha", "ext"}


def test_no_nvidia_stack_sharing_or_telemetry_finding_on_other_vendors_nodes():
    """gpuposture cannot read AMD's, Intel's or Habana's stack, sharing or telemetry: it says
    nothing there (the sync names the nodes as not judged) rather than a guess."""
    nvidia_only = ("STACK-", "SHARE-", "POD-011", "ATTR-", "DRIFT-", "LEAK-001")
    drafts = [d for d in run_checks(mixed()) if d.check_id.startswith(nvidia_only)]
    assert not [d for d in drafts if d.subject_name in (*OTHER_NODES, "cpu-a")]
    assert not [d for d in drafts if any(n in str(d.evidence) for n in OTHER_NODES)]


@pytest.mark.django_db
def test_node_api_and_checklist_after_a_sync_of_the_mixed_cluster(personas, tmp_path):
    """The node JSON names another vendor's accelerators (its NVIDIA fields stay null, its patch
    status unknown); checklist item 3 counts the AMD, Intel and Gaudi nodes it could not
    inventory, item 8 fails on their untainted pools."""
    from inventory.services import cluster_sync_from_snapshot
    from inventory.sync import cluster_get_or_create
    from posture.services import posture_evaluate

    path = tmp_path / "mixed.json"
    path.write_text(json.dumps({"kind": "List", "items": objects()}))
    cluster_sync_from_snapshot(cluster=cluster_get_or_create(name="mixed"), paths=[str(path)])
    posture_evaluate()
    lead = api_client(personas["security_lead"])
    rows = lead.get("/api/v1/nodes/?cluster=mixed").json()["results"]
    nodes = {n["name"]: n for n in rows}
    amd = nodes["mi300-a"]
    assert amd["accelerator_resources"] == {"amd.com/gpu": 8}
    assert amd["is_accelerator_node"] and not amd["is_gpu_node"]
    assert (amd["gpu_model"], amd["gpu_count"], amd["driver_version"]) == (None, None, None)
    assert amd["patch_status"] == "unknown"
    assert nodes["h100-a"]["is_accelerator_node"] and nodes["h100-a"]["accelerator_resources"] == {}
    assert not nodes["cpu-a"]["is_accelerator_node"]
    items = lead.get("/api/v1/clusters/mixed/checklist/").json()
    # Fails on STACK-004 (h100-a's versions are not in this world), naming the nodes not read.
    assert items[2]["status"] == "fail"
    assert items[2]["evidence"]["accelerator_nodes_not_inventoried"] == 3
    assert items[7]["status"] == "fail"
    assert items[7]["evidence"]["open_findings"]["K8S-002"] == 2
