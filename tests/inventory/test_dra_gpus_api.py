"""`/api/v1/gpus/` lists the GPUs of a node whose GPUs only the NVIDIA DRA driver's
ResourceSlices publish, with the UUIDs they publish, in the order of their `index`."""

from __future__ import annotations

import json

import pytest

from inventory.services import cluster_sync_from_snapshot
from inventory.sync import cluster_get_or_create
from tests.conftest import api_client
from tests.inventory.test_dra_only_nodes import dra_node
from tests.posture.dra_world import gpu_device, mig_device, resource_slice
from tests.posture.gpu_access_world import UUIDS

pytestmark = pytest.mark.django_db


def _sync(tmp_path, items: list[dict]) -> None:
    path = tmp_path / "lab.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    cluster_sync_from_snapshot(
        cluster=cluster_get_or_create(name="lab"), paths=[path], remember=False
    )


def _gpus(personas, node: str) -> list[dict]:
    client = api_client(personas["auditor"])
    rows = client.get("/api/v1/gpus/?cluster=lab&page_size=100").json()["results"]
    return [r for r in rows if r["node"] == node]


def test_a_dra_only_nodes_gpus_are_listed_with_the_uuids_its_slice_publishes(tmp_path, personas):
    devices = [gpu_device(i) for i in (2, 0, 3, 1)]  # published in any order
    _sync(tmp_path, [dra_node("dra-1"), resource_slice("dra-1", devices)])
    rows = _gpus(personas, "dra-1")
    assert [(r["index"], r["uuid"]) for r in rows] == [(i, UUIDS[i]) for i in range(4)]


def test_mig_devices_name_their_parent_gpu(tmp_path, personas):
    migs = [mig_device(1, "3g.40gb", "MIG-aaaa"), mig_device(0, "7g.80gb", "MIG-bbbb")]
    _sync(tmp_path, [dra_node("dra-m"), resource_slice("dra-m", migs)])
    assert [r["uuid"] for r in _gpus(personas, "dra-m")] == [UUIDS[0], UUIDS[1]]


def _unindexed(index: int) -> dict:
    """A GPU device whose slice publishes its UUID but no `index` attribute."""
    device = gpu_device(index)
    del device["attributes"]["index"]
    return device


def test_a_device_without_an_index_does_not_shift_the_others_uuids(tmp_path, personas):
    """rtself6 k84: gpu-0 publishes no index, gpu-1..3 publish theirs. Sorting the devices
    gave row 0 GPU-1's UUID and every row another GPU's. Each indexed GPU keeps its row; the
    one UUID with no index takes the one index none publishes (certain: four GPUs, 1..3 taken)."""
    devices = [_unindexed(0), gpu_device(1), gpu_device(2), gpu_device(3)]
    _sync(tmp_path, [dra_node("dra-noidx"), resource_slice("dra-noidx", devices)])
    rows = _gpus(personas, "dra-noidx")
    assert [(r["index"], r["uuid"]) for r in rows] == [(i, UUIDS[i]) for i in range(4)]


def test_uuids_whose_index_is_not_certain_are_left_out(tmp_path, personas):
    """Two devices without an index, two free indexes: which is which is not known, so both
    rows say null, and the indexed GPUs keep theirs."""
    devices = [_unindexed(0), gpu_device(1), _unindexed(2), gpu_device(3)]
    _sync(tmp_path, [dra_node("dra-two"), resource_slice("dra-two", devices)])
    rows = _gpus(personas, "dra-two")
    assert [(r["index"], r["uuid"]) for r in rows] == [
        (0, None),
        (1, UUIDS[1]),
        (2, None),
        (3, UUIDS[3]),
    ]
