"""A node HAMi shares reads as time-slicing in the inventory (DESIGN §2), as
the checks judge its pods' holdings: HAMi (its shares, its device plugin, its register
annotation). KAI / Run:ai fraction nodes, and nodes where no fractional scheduler runs, keep
what GFD says."""

from __future__ import annotations

from typing import Any

from inventory.sources.fractional_nodes import split_count
from inventory.sources.normalise import normalise
from tests.posture.gpu_access_world import (
    UUIDS,
    container,
    hami_pod,
    kai_fraction_pod,
    kai_reservation_pod,
    node,
    pod,
)


def _node(*objects: dict[str, Any], annotations: dict[str, str] | None = None):
    """gpu-a: 8 GPUs, each advertised once (HAMi's plugin with no GFD replica label)."""
    raw = node("gpu-a", capacity={"nvidia.com/gpu": "8"})
    raw["metadata"]["annotations"] = annotations or {}
    (found,) = [n for n in normalise([raw, *objects]).nodes if n.name == "gpu-a"]
    return found


def _on_gpu_a(obj: dict[str, Any]) -> dict[str, Any]:
    obj["spec"]["nodeName"] = "gpu-a"
    return obj


def test_a_node_with_hami_shares_is_time_slicing_with_a_basis_naming_hami():
    found = _node(
        _on_gpu_a(hami_pod("alpha", "infer-a", UUIDS[0], **{"nvidia.com/gpumem": "3000"}))
    )
    assert found.sharing_strategy == "time_slicing"
    assert "HAMi" in found.sharing_basis and "shares unknown" in found.sharing_basis
    assert found.time_slicing_replicas is None


def test_hamis_register_annotation_gives_the_split_count():
    register = (
        f"{UUIDS[0]},10,32768,100,NVIDIA-H100,0,true:{UUIDS[1]},10,32768,100,NVIDIA-H100,0,true:"
    )
    found = _node(annotations={"hami.io/node-nvidia-register": register})
    assert found.sharing_strategy == "time_slicing"
    assert found.time_slicing_replicas == 10
    assert "10 shares per GPU (deviceSplitCount)" in found.sharing_basis


def test_split_count_is_unknown_where_gpus_disagree_or_the_value_is_unreadable():
    assert split_count(f"{UUIDS[0]},10,1,1,x,0,true:{UUIDS[1]},4,1,1,x,0,true:") is None
    assert split_count("garbled") is None
    assert split_count(f'[{{"id": "{UUIDS[0]}", "count": 5}}]') == 5


def test_a_node_hamis_device_plugin_runs_on_is_time_slicing():
    plugin = _on_gpu_a(
        pod("kube-system", "hami-device-plugin-x", container(image="projecthami/hami:v2.4.1"))
    )
    found = _node(plugin)
    assert found.sharing_strategy == "time_slicing"
    assert "device plugin runs on the node" in found.sharing_basis


def test_a_node_with_kai_fractions_keeps_what_gfd_says():
    # A whole nvidia.com/gpu beside KAI's fractions stays exclusive (the reservation pod holds
    # one GPU the fractions share): the node is not time-sliced, its fractions' holdings are
    # (tests/posture/test_gpu_access_sharing.py, the tenant's fake reservation pod).
    found = _node(
        kai_reservation_pod("group-one", UUIDS[0]),
        kai_fraction_pod("alpha", "notebook-a", "group-one"),
    )
    assert found.sharing_strategy == "none"
    assert found.sharing_basis == ""


def test_a_node_with_whole_gpu_pods_only_keeps_none():
    found = _node(_on_gpu_a(pod("alpha", "train", container(gpu={"nvidia.com/gpu": "1"}))))
    assert found.sharing_strategy == "none"
    assert found.sharing_basis == ""


def test_volcano_vgpu_registered_gpus_make_the_node_time_slicing_with_its_split():
    register = (
        f"{UUIDS[0]},10,81920,100,NVIDIA-A100,0,true:{UUIDS[1]},10,81920,100,NVIDIA-A100,0,true:"
    )
    found = _node(annotations={"volcano.sh/node-vgpu-register": register})
    assert found.sharing_strategy == "time_slicing"
    assert found.time_slicing_replicas == 10
    assert found.sharing_basis.startswith("Volcano vGPU shares the GPUs")


def test_hami_sharing_counted_from_the_surplus_still_names_hami():
    # GFD before v0.15 writes no sharing-strategy label: HAMi's plugin serves each of a GPU's
    # 10 shares as one nvidia.com/gpu, so 80 of 8 GPUs already read time-slicing; the basis
    # must still say who shares them (rtholdout8 k51: it was empty).
    register = ":".join(f"{uuid},10,46068,100,NVIDIA-L40S,0,true" for uuid in UUIDS[:8]) + ":"
    raw = node("gpu-a", capacity={"nvidia.com/gpu": "80"})
    raw["metadata"]["annotations"] = {"hami.io/node-nvidia-register": register}
    (found,) = [n for n in normalise([raw]).nodes if n.name == "gpu-a"]
    assert found.gpu_count == 8
    assert found.sharing_strategy == "time_slicing"
    assert "HAMi shares the GPUs under soft memory and core limits" in found.sharing_basis
    assert found.time_slicing_replicas == 10
