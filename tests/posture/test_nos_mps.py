"""Nebuly nos partitions a node's GPUs by MPS (`nos.nebuly.com/gpu-partitioning=mps`) into
slices advertised as `nvidia.com/gpu-<N>gb`: MPS clients of one GPU, judged as NVIDIA MPS
(SHARE-006, SHARE-003, SHARE-004); nos's `mig` partitioning stays MIG (rtfractions)."""

from __future__ import annotations

from tests.posture.builders import tenant
from tests.posture.gpu_access_world import container, node, pod, run, world

ALPHA, BRAVO = tenant("alpha", "internal"), tenant("bravo", "internal")
SLICE = {"nvidia.com/gpu-10gb": "1"}


def _nos(mode: str, capacity: dict[str, str], *pods: dict):
    labels = {"nos.nebuly.com/gpu-partitioning": mode}
    return world([node("gpu-a", gpus=1, capacity=capacity, labels=labels), *pods], (ALPHA, BRAVO))


def _mps(*pods: dict):
    return _nos("mps", {"nvidia.com/gpu": "0", "nvidia.com/gpu-10gb": "4"}, *pods)


def test_nos_mps_slices_of_two_tenants_are_mps_clients_of_one_gpu():
    inputs = _mps(pod("alpha", "a", container(gpu=SLICE)), pod("bravo", "b", container(gpu=SLICE)))
    (gpu_node,) = inputs.snapshot.nodes
    assert (gpu_node.sharing_strategy, gpu_node.gpu_count) == ("mps", 1)
    (draft,) = run("SHARE-006", inputs)
    assert draft.tenants == ("alpha", "bravo")
    assert draft.evidence["co_residence"] == "certain"
    (forbidden,) = run("SHARE-003", inputs)
    assert set(forbidden.tenants) == {"alpha", "bravo"}


def test_one_tenant_on_nos_mps_needs_an_approval_only():
    inputs = _mps(pod("alpha", "a", container(gpu=SLICE)))
    assert run("SHARE-006", inputs) == []
    (draft,) = run("SHARE-004", inputs)
    assert (draft.tenants, draft.evidence["observed_mode"]) == (("alpha",), "mps")


def test_nos_mig_partitioning_stays_mig():
    mig = {"nvidia.com/mig-3g.20gb": "1"}
    inputs = _nos(
        "mig",
        {"nvidia.com/gpu": "0", "nvidia.com/mig-3g.20gb": "2"},
        pod("alpha", "a", container(gpu=mig)),
        pod("bravo", "b", container(gpu=mig)),
    )
    (gpu_node,) = inputs.snapshot.nodes
    assert gpu_node.sharing_strategy == "mig"
    assert run("SHARE-001", inputs) == [] and run("SHARE-006", inputs) == []
