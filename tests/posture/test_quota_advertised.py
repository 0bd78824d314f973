"""K8S-001 asks a quota key for every GPU resource the cluster's nodes advertise, not only the
ones a namespace uses today: a key absent from `spec.hard` is no limit, so a quota on
`requests.nvidia.com/gpu` leaves every MIG slice and shared replica free for the taking."""

from __future__ import annotations

import pytest

import posture.rules  # noqa: F401  (registers the checks)
from inventory.snapshot import DraDevice, DraSlice, Node, ResourceQuota
from tests.posture.builders import gpu_node, inputs, pod, run, tenant

TEAM = tenant("team", namespaces=("team-a",))
WHOLE = gpu_node("gpu-1")  # advertises nvidia.com/gpu
MIG = gpu_node("mig-1", gpu_capacity={"nvidia.com/mig-1g.10gb": 7, "nvidia.com/mig-3g.40gb": 0})
SHARED = gpu_node("ts-1", gpu_capacity={"nvidia.com/gpu.shared": 16})
NIC = gpu_node("nic-1", gpu_capacity={"nvidia.com/gpu": 4, "nvidia.com/hostdev": 8})
GPU_ONLY = ResourceQuota("team-a", "gpu", {"requests.nvidia.com/gpu": "4"})


def _missing(nodes, quotas, pods=()):
    world = inputs(nodes=nodes, pods=pods, tenants=(TEAM,), quotas=quotas)
    return [m["resource"] for d in run("K8S-001", world) for m in d.evidence["missing"]]


def test_a_gpu_quota_leaves_the_advertised_mig_slices_unbounded():
    team_pod = pod("team-a", gpu={"nvidia.com/gpu": 1})
    assert _missing((WHOLE, MIG), (GPU_ONLY,), (team_pod,)) == ["nvidia.com/mig-1g.10gb"]
    world = inputs(nodes=(WHOLE, MIG), pods=(team_pod,), tenants=(TEAM,), quotas=(GPU_ONLY,))
    (draft,) = run("K8S-001", world)
    (entry,) = draft.evidence["missing"]
    assert (entry["in_use"], entry["pod_count"], entry["expected_key"]) == (
        False,
        0,
        "requests.nvidia.com/mig-1g.10gb",
    )


@pytest.mark.parametrize(
    ("nodes", "quotas", "missing"),
    [
        # No GPU pods, only whole GPUs advertised: the GPU key bounds it (a quota of 0 too).
        ((WHOLE,), (GPU_ONLY,), []),
        ((WHOLE,), (ResourceQuota("team-a", "z", {"requests.nvidia.com/gpu": "0"}),), []),
        # Time-sliced replicas under their renamed resource.
        ((WHOLE, SHARED), (GPU_ONLY,), ["nvidia.com/gpu.shared"]),
        (
            (WHOLE, SHARED),
            (
                GPU_ONLY,
                ResourceQuota("team-a", "ts", {"requests.nvidia.com/gpu.shared": "0"}),
            ),
            [],
        ),
        # The Network Operator's NICs are no GPU resource.
        ((NIC,), (GPU_ONLY,), []),
        # A MIG key alone leaves the whole GPUs free.
        (
            (WHOLE, MIG),
            (ResourceQuota("team-a", "m", {"requests.nvidia.com/mig-1g.10gb": "1"}),),
            ["nvidia.com/gpu"],
        ),
        # With no GPU node in the snapshot the old rule holds: some enforced GPU key.
        ((), (GPU_ONLY,), []),
        ((), (ResourceQuota("team-a", "p", {"count/pods": "10"}),), ["nvidia.com/gpu"]),
    ],
)
def test_advertised_resources_table(nodes, quotas, missing):
    assert _missing(nodes, quotas) == missing


def test_the_title_tells_a_key_no_quota_holds_from_one_a_scoped_quota_leaves_pods_out():
    scoped = ResourceQuota(
        "team-a",
        "gpu-high",
        {"requests.nvidia.com/gpu": "4"},
        scope_selector=({"scopeName": "PriorityClass", "operator": "In", "values": ["high"]},),
    )
    world = inputs(
        nodes=(WHOLE, MIG),
        pods=(pod("team-a", gpu={"nvidia.com/gpu": 1}),),
        tenants=(TEAM,),
        quotas=(scoped,),
    )
    (draft,) = run("K8S-001", world)
    assert draft.title == (
        "Namespace team-a of tenant team has no quota on requests.nvidia.com/mig-1g.10gb; "
        "no quota on requests.nvidia.com/gpu for every pod (scoped quotas do not count pods "
        "without a priority class)"
    )


CPU = Node("cpu-1", gpu_count=0, gpu_capacity={})
WEB = pod("team-a", name="web", node="cpu-1")  # nginx-like: no GPU
GPU_SLICE = DraSlice(
    "cpu-1-gpu.nvidia.com",
    "gpu.nvidia.com",
    "cpu-1",
    node_name="cpu-1",
    devices=(DraDevice("gpu-0"),),
)


@pytest.mark.parametrize(
    ("nodes", "pods", "snapshot", "fires"),
    [
        # A CPU-only cluster: no GPU node, no GPU pod, no GPU ResourceSlice: nothing to bound.
        ((CPU,), (WEB,), {}, False),
        # One GPU node: a namespace with no quota on it is unbounded, as before.
        ((CPU, WHOLE), (WEB,), {}, True),
        # No GPU node, but a pod holds a GPU, or a ResourceSlice publishes one: judged.
        ((CPU,), (WEB, pod("team-a", name="t", gpu={"nvidia.com/gpu": 1})), {}, True),
        ((CPU,), (WEB,), {"dra_slices": (GPU_SLICE,)}, True),
        # No node read at all: whether the cluster has GPUs is unknown, so the rule holds.
        ((), (WEB,), {}, True),
    ],
)
def test_a_cluster_without_any_gpu_raises_no_quota_finding(nodes, pods, snapshot, fires):
    world = inputs(nodes=nodes, pods=pods, tenants=(TEAM,), **snapshot)
    assert [d.subject_name for d in run("K8S-001", world)] == (["team-a"] if fires else [])
