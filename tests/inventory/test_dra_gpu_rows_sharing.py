"""`/api/v1/gpus/` gives each GPU of a DRA node its own sharing: one GPU two claims share by
MPS reads `mps`, the GPU a claim holds alone and the idle ones read `none`, while the node (and
the checks) take the weakest. Where a held device names no GPU index, every row keeps the
node's weakest: no GPU is said to be better isolated than can be shown."""

from __future__ import annotations

import json

import pytest

from inventory.services import cluster_sync_from_snapshot
from inventory.sources.normalise import normalise
from inventory.sync import cluster_get_or_create
from tests.conftest import api_client
from tests.inventory.test_dra_only_nodes import dra_node
from tests.posture.dra_world import claim, device_class, dra_pod, gpu_device, resource_slice
from tests.posture.gpu_access_world import OPERATOR_NS, namespace

NODE = "dra-g"


def _world(*, shared: str = "MPS", devices: list[dict] | None = None) -> list[dict]:
    on = {"node": NODE}
    return [
        namespace("alpha"),
        namespace("beta"),
        dra_node(NODE),
        device_class(),
        resource_slice(NODE, devices),
        claim("alpha", "a", ["gpu-0"], sharing=shared, reserved_for=["a-0"], **on),
        claim("beta", "b", ["gpu-0"], sharing=shared, reserved_for=["b-0"], **on),
        claim("alpha", "whole", ["gpu-1"], reserved_for=["w-0"], **on),
        dra_pod("alpha", "a-0", "a", node_name=NODE),
        dra_pod("beta", "b-0", "b", node_name=NODE),
        dra_pod("alpha", "w-0", "whole", node_name=NODE),
    ]


def _rows(tmp_path, personas, items: list[dict], query: str = "") -> list[tuple[int, str]]:
    path = tmp_path / "lab.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    cluster_sync_from_snapshot(
        cluster=cluster_get_or_create(name="lab"), paths=[path], remember=False
    )
    client = api_client(personas["auditor"])
    answer = client.get(f"/api/v1/gpus/?cluster=lab&page_size=100{query}")
    assert answer.status_code == 200, answer.content
    return [(r["index"], r["sharing_strategy"]) for r in answer.json()["results"]]


def _node(items: list[dict]):
    (found,) = normalise(items, configured_platform=(OPERATOR_NS,)).nodes
    return found


def test_the_node_takes_the_weakest_and_says_which_gpus_are_not():
    node = _node(_world())
    assert node.sharing_strategy == "mps"
    assert node.gpu_sharing == {"1": "none", "2": "none", "3": "none"}


@pytest.mark.django_db
def test_each_gpu_row_reads_its_own_sharing(tmp_path, personas):
    rows = _rows(tmp_path, personas, _world())
    assert rows == [(0, "mps"), (1, "none"), (2, "none"), (3, "none")]


@pytest.mark.django_db
def test_the_sharing_filter_reads_each_gpus_own(tmp_path, personas):
    assert _rows(tmp_path, personas, _world(), "&sharing_strategy=mps") == [(0, "mps")]
    unshared = _rows(tmp_path, personas, _world(), "&sharing_strategy=none")
    assert unshared == [(1, "none"), (2, "none"), (3, "none")]


@pytest.mark.django_db
def test_time_sliced_by_dra_has_no_replica_count_on_any_row(tmp_path, personas):
    path = tmp_path / "lab.json"
    path.write_text(json.dumps({"kind": "List", "items": _world(shared="TimeSlicing")}))
    cluster_sync_from_snapshot(
        cluster=cluster_get_or_create(name="lab"), paths=[path], remember=False
    )
    rows = api_client(personas["auditor"]).get("/api/v1/gpus/?cluster=lab").json()["results"]
    assert [(r["sharing_strategy"], r["time_slicing_replicas"]) for r in rows] == [
        ("time_slicing", None),
        ("none", None),
        ("none", None),
        ("none", None),
    ]


def test_a_held_device_with_no_gpu_index_leaves_every_gpu_at_the_nodes_weakest():
    devices = [gpu_device(i) for i in range(4)]
    del devices[1]["attributes"]["index"]  # gpu-1, held alone, names no index
    node = _node(_world(devices=devices))
    assert node.sharing_strategy == "mps" and node.gpu_sharing == {}


def test_a_node_dra_does_not_touch_keeps_no_per_gpu_sharing():
    node = _node([namespace("alpha"), dra_node(NODE), device_class(), resource_slice(NODE)])
    assert node.sharing_strategy == "none" and node.gpu_sharing == {}
