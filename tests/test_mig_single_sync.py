"""A MIG single-strategy node's physical GPUs, as a sync stores them: `/api/v1/nodes/` gives the
count and how it was derived, and a watch re-sync derives it from the stored mig-parted
ConfigMap as the full list did (tests/inventory/test_mig_single_count.py: the rules)."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from inventory.models import Node
from inventory.services import cluster_sync, cluster_sync_from_snapshot
from inventory.sync import cluster_get_or_create
from tests.conftest import api_client, world_snapshot_path
from tests.inventory.test_mig_single_count import FOUR_SMALL, mig_node, mig_parted
from tests.test_watch_sync import item, source, world

pytestmark = pytest.mark.django_db


def test_the_node_api_and_page_give_the_physical_count_and_its_basis(
    small_world, personas, tmp_path
):
    path = tmp_path / "mig.json"
    path.write_text(json.dumps({"kind": "List", "apiVersion": "v1", "items": [mig_node()]}))
    cluster_sync_from_snapshot(cluster=small_world, paths=[world_snapshot_path(), path])
    body = api_client(personas["security_lead"]).get("/api/v1/nodes/").json()
    (found,) = [n for n in body["results"] if n["name"] == "mig-1"]
    assert found["gpu_count"] == 8
    assert found["gpu_count_basis"].startswith("label nvidia.com/gpu.count=56 counts 1g.10gb")
    assert found["gpu_count_basis"].endswith(": 56 / 7 = 8")
    browser = Client()
    browser.force_login(personas["platform_engineer"])
    page = browser.get(f"/nodes/{small_world.name}/mig-1/").content.decode()
    assert '<td data-gpu-count>8<div class="muted" data-basis="gpu_count">from label' in page


def test_a_watch_resync_reads_the_stored_mig_parted_config(small_world, tmp_path):
    from tests.kubeapi import FakeKubeAPI

    objects = [*world(), mig_parted(FOUR_SMALL), mig_node(config="four-small")]
    with FakeKubeAPI(objects) as api:
        cluster = cluster_get_or_create(name="live")
        assert cluster_sync(cluster=cluster, source=source(api, tmp_path)).mode == "full"
        first = Node.objects.get(cluster=cluster, name="mig-1")
        assert first.gpu_count == 14
        # A relabelled node is read again on the watch, with no ConfigMap event.
        item(objects, "Node", "mig-1")["metadata"]["labels"]["topology.example/rack"] = "r7"
        api.replace_objects(objects)
        cluster.refresh_from_db()
        assert cluster_sync(cluster=cluster, source=source(api, tmp_path)).mode == "watch"
    again = Node.objects.get(cluster=cluster, name="mig-1")
    assert again.labels["topology.example/rack"] == "r7"
    assert again.gpu_count == 14
    assert again.data["gpu_count_basis"] == first.data["gpu_count_basis"]
    assert "gives each H100-80GB GPU 4 x 1g.10gb: 56 / 4 = 14" in again.data["gpu_count_basis"]
