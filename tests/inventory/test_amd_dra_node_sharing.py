"""A node whose AMD GPUs only AMD's DRA driver publishes (no capacity, no labeller labels)
reads as the device plugin's AMD nodes do in `/api/v1/nodes/` (docs/api.md): its
`sharing_strategy` is null, not `none` (NVIDIA's default, said of GPUs it does not have, beside
two tenants holding compute partitions of one GPU there), with `sharing_basis` saying why, and
`?sharing_strategy=not_read` lists it (rtself6 k16, item 2)."""

from __future__ import annotations

import json

import pytest

from inventory.services import cluster_sync_from_snapshot
from inventory.sync import cluster_get_or_create
from tests.conftest import api_client
from tests.posture.test_amd_partition_leak import K16, _objects
from tests.posture.test_dra_amd import NODE

pytestmark = pytest.mark.django_db


def _names(client, query: str) -> list[str]:
    rows = client.get(f"/api/v1/nodes/?cluster=amd&{query}").json()["results"]
    return [r["name"] for r in rows]


def _synced(tmp_path, personas):
    """The cluster `amd` synced from rtself6 k16's world; an auditor's API client."""
    path = tmp_path / "amd.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": _objects(K16)}))
    cluster_sync_from_snapshot(
        cluster=cluster_get_or_create(name="amd"), paths=[path], remember=False
    )
    return api_client(personas["auditor"])


def test_a_dra_only_amd_node_reads_its_sharing_as_not_read(tmp_path, personas):
    client = _synced(tmp_path, personas)
    (row,) = client.get("/api/v1/nodes/?cluster=amd").json()["results"]
    assert row["name"] == NODE
    assert row["sharing_strategy"] is None
    assert "gpu.amd.com: 3 device(s)" in row["sharing_basis"]
    assert "not read as a node sharing strategy" in row["sharing_basis"]
    assert row["accelerator_vendors"] == ["AMD"]
    assert _names(client, "sharing_strategy=none") == []
    assert _names(client, "sharing_strategy=not_read") == [NODE]


def test_a_dra_only_amd_node_is_an_accelerator_node(tmp_path, personas):
    """docs/api.md: `?gpu=true` lists nodes with GPUs of any vendor; one whose GPUs only AMD's
    DRA driver publishes has no capacity to say so, and is no less a GPU node (its pool, taints
    and quota are judged as the device plugin's AMD nodes' are)."""
    client = _synced(tmp_path, personas)
    (row,) = client.get("/api/v1/nodes/?cluster=amd").json()["results"]
    assert row["is_accelerator_node"] is True
    assert row["is_gpu_node"] is False  # no NVIDIA GPU: NVIDIA's stack checks stay away
    assert _names(client, "gpu=true") == [NODE]
    assert _names(client, "gpu=false") == []
