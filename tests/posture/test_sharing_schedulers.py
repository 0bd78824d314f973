"""Koordinator's GPU share, Tencent's qGPU, Aliyun's gpushare / cGPU and Volcano's vGPU: GPU-
sharing schedulers with their own resource names and no hardware memory or fault isolation,
judged as time-slicing (DESIGN §2). Two tenants on one GPU meet for certain; where the
scheduler names each pod's GPU (Koordinator's minor, Aliyun's index, Volcano's UUID), on
different GPUs they do not meet; where it names none, they may (rtfractions)."""

from __future__ import annotations

import json

import pytest

from posture.rules.plugin_holdings import plugin_holdings
from tests.posture.builders import tenant
from tests.posture.gpu_access_world import UUIDS, container, node, pod, run, world

ALPHA, EXT = tenant("alpha", "internal"), tenant("ext", "external")
KOORD = {"koordinator.sh/gpu-core": "50", "koordinator.sh/gpu-memory-ratio": "50"}
KOORD_SHARED = {"koordinator.sh/gpu.shared": "1", "koordinator.sh/gpu-memory-ratio": "30"}
QGPU = {"tke.cloud.tencent.com/qgpu-core": "50", "tke.cloud.tencent.com/qgpu-memory": "10"}
CGPU = {"aliyun.com/gpu-mem": "8", "aliyun.com/gpu-core.percentage": "30"}
VOLCANO = {"volcano.sh/vgpu-number": "1", "volcano.sh/vgpu-memory": "4096"}
ALIYUN = {"aliyun.com/gpu-mem": "8"}


def _koord(minor: int) -> dict[str, str]:
    allocated = {"gpu": [{"minor": minor, "resources": {"koordinator.sh/gpu-core": "50"}}]}
    return {"scheduling.koordinator.sh/device-allocated": json.dumps(allocated)}


def _aliyun(index: int) -> dict[str, str]:
    return {"ALIYUN_COM_GPU_MEM_IDX": str(index), "ALIYUN_COM_GPU_MEM_POD": "8"}


def _volcano(index: int) -> dict[str, str]:
    return {"volcano.sh/vgpu-ids-new": f"{UUIDS[index]},NVIDIA,4096,0:;"}


def _pair(asked: dict[str, str], gpus: int, first=None, second=None):
    return world(
        [
            node("gpu-a", gpus=gpus),
            pod("alpha", "a", container(gpu=asked), annotations=first),
            pod("ext", "b", container(gpu=asked), annotations=second),
        ],
        (ALPHA, EXT),
    )


@pytest.mark.parametrize("asked", [KOORD, KOORD_SHARED, QGPU, CGPU])
def test_two_tenants_on_a_one_gpu_node_share_it_for_certain(asked):
    inputs = _pair(asked, gpus=1)
    (draft,) = run("SHARE-001", inputs)
    assert draft.tenants == ("alpha", "ext")
    assert draft.evidence["co_residence"] == "certain"
    (share_003,) = run("SHARE-003", inputs)
    assert "ext" in share_003.tenants
    (gpu_node,) = inputs.snapshot.nodes
    assert gpu_node.sharing_strategy == "time_slicing"
    assert gpu_node.gpu_count == 1


@pytest.mark.parametrize(
    ("asked", "scheduler"), [(KOORD, "Koordinator"), (QGPU, "Tencent qGPU"), (CGPU, "Aliyun")]
)
def test_the_node_says_which_scheduler_shares_it(asked, scheduler):
    (gpu_node,) = _pair(asked, gpus=2).snapshot.nodes
    assert scheduler in gpu_node.sharing_basis
    assert "HAMi" not in gpu_node.sharing_basis


@pytest.mark.parametrize("asked", [KOORD_SHARED, QGPU])
def test_no_gpu_named_on_a_multi_gpu_node_is_a_possible_meeting(asked):
    (draft,) = run("SHARE-001", _pair(asked, gpus=4))
    assert draft.tenants == ("alpha", "ext")
    assert draft.evidence["co_residence"] == "possible"


@pytest.mark.parametrize(
    ("asked", "named"), [(KOORD, _koord), (ALIYUN, _aliyun), (VOLCANO, _volcano)]
)
@pytest.mark.parametrize(("devices", "verdict"), [((0, 0), "certain"), ((0, 1), None)])
def test_the_gpus_the_scheduler_names_decide(asked, named, devices, verdict):
    inputs = _pair(asked, 2, named(devices[0]), named(devices[1]))
    found = run("SHARE-001", inputs)
    assert [d.evidence["co_residence"] for d in found] == ([verdict] if verdict else [])
    assert bool(run("SHARE-003", inputs)) == bool(verdict)


def test_an_unreadable_koordinator_allocation_names_no_gpu():
    garbled = {"scheduling.koordinator.sh/device-allocated": '{"gpu": [{"minor": "x"}]}'}
    (draft,) = run("SHARE-001", _pair(KOORD, 2, garbled, _koord(1)))
    assert draft.evidence["co_residence"] == "possible"


@pytest.mark.parametrize("asked", [KOORD, QGPU, CGPU])
def test_one_tenant_alone_needs_an_approval_only(asked):
    inputs = world([node("gpu-a", gpus=1), pod("alpha", "a", container(gpu=asked))], (ALPHA,))
    assert run("SHARE-001", inputs) == [] and run("SHARE-003", inputs) == []
    (draft,) = run("SHARE-004", inputs)
    assert draft.tenants == ("alpha",)
    assert draft.evidence["observed_mode"] == "time_slicing"


def test_one_pod_asking_a_scheduler_for_core_and_memory_holds_one_share():
    inputs = world([node("gpu-a", gpus=2), pod("alpha", "a", container(gpu=KOORD))], (ALPHA,))
    (gpu_node,) = inputs.snapshot.nodes
    (holding,) = plugin_holdings(inputs, gpu_node)
    assert (holding.pool, holding.count, holding.mode) == ("nvidia.com/gpu", 1, "time_slicing")


@pytest.mark.parametrize(
    ("annotation", "devices"),
    [
        ({"volcano.sh/vgpu-ids-new": f"{UUIDS[0]},NVIDIA,4096,0:{UUIDS[1]},NVIDIA,4096,0:;"}, 2),
        ({"ALIYUN_COM_GPU_MEM_IDX": "0,1"}, 2),
        ({"ALIYUN_COM_GPU_MEM_IDX": "-1"}, None),  # no index: which GPU is not known
    ],
)
def test_the_devices_a_pod_holds_are_all_the_annotation_names(annotation, devices):
    asked = VOLCANO if "volcano.sh/vgpu-ids-new" in annotation else ALIYUN
    inputs = world(
        [node("gpu-a", gpus=2), pod("alpha", "a", container(gpu=asked), annotations=annotation)],
        (ALPHA,),
    )
    (gpu_node,) = inputs.snapshot.nodes
    (holding,) = plugin_holdings(inputs, gpu_node)
    assert (len(holding.devices) if holding.devices else None) == devices


@pytest.mark.parametrize(
    ("asked", "gpus"),
    [(KOORD, 1), (ALIYUN, 1), (QGPU, 1), ({"koordinator.sh/gpu-core": "200"}, 2)],
)
def test_pod011_counts_a_scheduler_share_in_gpus_not_its_units(asked, gpus):
    """`gpu-core: 50` is half of one GPU and `gpu-mem: 8` 8 GiB of one: a container naming
    every GPU over such a share overrides that many GPUs, not 50 or 8."""
    probe = container("probe", gpu=asked, env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}])
    inputs = world([node("gpu-a", gpus=2), pod("alpha", "probe", probe)], (ALPHA,))
    (draft,) = run("POD-011", inputs)
    (entry,) = draft.evidence["containers"]
    assert entry["requested_gpus"] == gpus
    assert f"over the {gpus} GPU(s) it requested" in draft.title


KOORD_WHOLE = {"koordinator.sh/gpu-core": "100", "koordinator.sh/gpu-memory-ratio": "100"}
QGPU_WHOLE = {"tke.cloud.tencent.com/qgpu-core": "100"}


@pytest.mark.parametrize("asked", [KOORD_WHOLE, QGPU_WHOLE, {"koordinator.sh/gpu": "100"}])
def test_a_whole_gpu_asked_of_a_sharing_scheduler_is_held_alone(asked):
    """Koordinator's `gpu-core: 100` with `gpu-memory-ratio: 100`, or qGPU's `qgpu-core: 100`,
    is a whole GPU: the scheduler counts it full and places no other pod's share on it. Two
    tenants each holding one are on different GPUs, so nothing is shared and no approval is due
    (it had read as time-slicing: a critical "possible" SHARE-001 and SHARE-004 for both)."""
    inputs = _pair(asked, gpus=2)
    for check in ("SHARE-001", "SHARE-003", "SHARE-004"):
        assert run(check, inputs) == [], check
    (gpu_node,) = inputs.snapshot.nodes
    assert gpu_node.sharing_strategy != "time_slicing"
    holdings = plugin_holdings(inputs, gpu_node)
    assert {(h.count, h.mode) for h in holdings} == {(1, "exclusive")}
    assert "whole GPU(s) held alone" in holdings[0].basis


def test_whole_gpus_count_in_hundreds():
    asked = {"koordinator.sh/gpu-core": "200", "koordinator.sh/gpu-memory-ratio": "200"}
    inputs = world([node("gpu-a", gpus=4), pod("alpha", "a", container(gpu=asked))], (ALPHA,))
    (gpu_node,) = inputs.snapshot.nodes
    (holding,) = plugin_holdings(inputs, gpu_node)
    assert (holding.count, holding.mode) == (2, "exclusive")


@pytest.mark.parametrize(
    "asked",
    [
        # Full cores but half the memory: another pod's share fits beside it.
        {"koordinator.sh/gpu-core": "100", "koordinator.sh/gpu-memory-ratio": "50"},
        # A memory amount, or a count of shared GPUs, beside the percentage is a share.
        {"tke.cloud.tencent.com/qgpu-core": "100", "tke.cloud.tencent.com/qgpu-memory": "10"},
        {"koordinator.sh/gpu.shared": "1", "koordinator.sh/gpu-core": "100"},
        {"koordinator.sh/gpu-core": "150", "koordinator.sh/gpu-memory-ratio": "150"},
        # cGPU's percentage rides on a share of memory.
        {"aliyun.com/gpu-mem": "80", "aliyun.com/gpu-core.percentage": "100"},
    ],
)
def test_anything_short_of_whole_gpus_stays_a_share(asked):
    inputs = _pair(asked, gpus=1)
    (draft,) = run("SHARE-001", inputs)
    assert draft.evidence["co_residence"] == "certain"
    (gpu_node,) = inputs.snapshot.nodes
    assert gpu_node.sharing_strategy == "time_slicing"


def _whole_minor(minor: int) -> dict[str, str]:
    allocated = {"gpu": [{"minor": minor, "resources": {"koordinator.sh/gpu-core": "100"}}]}
    return {"scheduling.koordinator.sh/device-allocated": json.dumps(allocated)}


HALF = {"koordinator.sh/gpu-core": "50", "koordinator.sh/gpu-memory-ratio": "50"}


@pytest.mark.parametrize(
    ("first", "second", "gpus", "annotations"),
    [
        (KOORD_WHOLE, HALF, 1, (None, None)),  # a whole GPU and a share on the one GPU
        (KOORD_WHOLE, KOORD_WHOLE, 1, (None, None)),  # two whole GPUs on one
        (KOORD_WHOLE, KOORD_WHOLE, 2, (_whole_minor(0), _whole_minor(0))),  # both on minor 0
        (
            {"tke.cloud.tencent.com/qgpu-core": "200"},
            {"tke.cloud.tencent.com/qgpu-core": "200"},
            2,
            (None, None),
        ),
    ],
)
def test_whole_gpus_the_node_cannot_hold_alone_are_shared(first, second, gpus, annotations):
    """The scheduler's accounting says a whole GPU is held alone; a snapshot with more whole
    GPUs (and shares) than the node has, or two pods on the GPU it names, shows otherwise (a
    pod placed past the scheduler): the GPU is shared, and the sharing checks judge it so."""
    inputs = world(
        [
            node("gpu-a", gpus=gpus),
            pod("alpha", "a", container(gpu=first), annotations=annotations[0]),
            pod("ext", "b", container(gpu=second), annotations=annotations[1]),
        ],
        (ALPHA, EXT),
    )
    (draft,) = run("SHARE-001", inputs)
    assert draft.tenants == ("alpha", "ext")
    (gpu_node,) = inputs.snapshot.nodes
    assert gpu_node.sharing_strategy == "time_slicing"
    assert {h.mode for h in plugin_holdings(inputs, gpu_node)} == {"time_slicing"}
