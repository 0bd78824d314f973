"""What a sync keeps for issue 17 items 5 and 6, end to end through the database: the
ConfigMaps pods take NVIDIA_VISIBLE_DEVICES from (a watch lists everything when one changes),
and when a MIG reconfiguration was first seen in progress (SHARE-009 when it stays stuck)."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from inventory.models import ClusterObject, Node
from inventory.services import cluster_sync, cluster_sync_from_snapshot
from inventory.sync import cluster_get_or_create
from posture.models import Finding
from posture.services import posture_evaluate
from tests.conftest import load_json
from tests.kubeapi import FakeKubeAPI
from tests.test_watch_sync import item, source

pytestmark = pytest.mark.django_db
NVD = "NVIDIA_VISIBLE_DEVICES"


def _probe(configmap: str) -> dict:
    """A tenant pod with no GPU request taking NVIDIA_VISIBLE_DEVICES from a ConfigMap."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"probe-{configmap}",
            "namespace": "team-alpha",
            "resourceVersion": "1",
        },
        "spec": {
            "nodeName": "gpu-ts-1",
            "containers": [
                {
                    "name": "probe",
                    "image": "nvidia/cuda:12.4.1-base-ubuntu22.04",
                    "envFrom": [{"configMapRef": {"name": configmap}}],
                }
            ],
        },
        "status": {"phase": "Running"},
    }


def _env_map(name: str, value: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "team-alpha", "resourceVersion": "1"},
        "data": {NVD: value, "DB_PASSWORD": "hunter2"},
    }


def _world(*extra: dict) -> list[dict]:
    return [*copy.deepcopy(load_json("small-cluster.json")["items"]), *extra]


@pytest.fixture
def api():
    with FakeKubeAPI(_world(_probe("gpu-env"), _env_map("gpu-env", "all"))) as server:
        yield server


@pytest.fixture
def listed(api, tmp_path, small_world):
    cluster = cluster_get_or_create(name="live")
    assert cluster_sync(cluster=cluster, source=source(api, tmp_path)).mode == "full"
    return cluster


def _stored(cluster) -> dict:
    row = ClusterObject.objects.get(cluster=cluster, kind="env_configmap", name="gpu-env")
    return row.data


def test_the_configmap_a_pod_takes_the_variable_from_is_kept_minimal(listed):
    data = _stored(listed)
    assert (data["keys"], data["values"]) == (["DB_PASSWORD", NVD], {NVD: "all"})
    assert "hunter2" not in json.dumps(data)
    posture_evaluate()
    finding = Finding.objects.get(cluster=listed, check_id="POD-011")
    assert [c["value"] for c in finding.evidence["containers"]] == ["all"]


def test_a_change_to_that_configmap_lists_everything(api, listed, tmp_path):
    api.replace_objects(_world(_probe("gpu-env"), _env_map("gpu-env", "void")))
    run = cluster_sync(cluster=listed, source=source(api, tmp_path))
    assert (run.status, run.mode) == ("succeeded", "full")
    assert _stored(listed)["values"] == {NVD: "void"}
    posture_evaluate()
    assert not Finding.objects.filter(cluster=listed, check_id="POD-011", status="open").exists()


def test_a_new_pod_reading_a_configmap_not_kept_lists_everything(api, listed, tmp_path):
    objects = _world(_probe("gpu-env"), _env_map("gpu-env", "all"), _env_map("other", "0"))
    api.replace_objects(objects)
    assert cluster_sync(cluster=listed, source=source(api, tmp_path)).mode == "watch"
    api.replace_objects([*objects, _probe("other")])
    run = cluster_sync(cluster=listed, source=source(api, tmp_path))
    assert (run.status, run.mode) == ("succeeded", "full")
    assert ClusterObject.objects.filter(cluster=listed, kind="env_configmap", name="other")


def test_a_status_update_of_such_a_pod_stays_a_watch(api, listed, tmp_path):
    objects = _world(_probe("gpu-env"), _env_map("gpu-env", "all"))
    item(objects, "Pod", "probe-gpu-env")["status"]["phase"] = "Pending"
    api.replace_objects(objects)
    assert cluster_sync(cluster=listed, source=source(api, tmp_path)).mode == "watch"


# --- MIG state ----------------------------------------------------------------------------------


def _mig_snapshot(tmp_path, state: str) -> str:
    objects = _world()
    node = item(objects, "Node", "gpu-ts-1")
    node["metadata"]["labels"].update(
        {"nvidia.com/mig.config": "all-1g.10gb", "nvidia.com/mig.config.state": state}
    )
    path = tmp_path / f"{state}.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    return str(path)


def test_a_reconfiguration_pending_on_two_syncs_an_hour_apart_is_stuck(tmp_path, small_world):
    path = _mig_snapshot(tmp_path, "pending")
    start = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
    with time_machine.travel(start, tick=False):
        cluster_sync_from_snapshot(cluster=small_world, paths=[path])
        posture_evaluate()
    assert not Finding.objects.filter(check_id="SHARE-009").exists()
    with time_machine.travel(start + timedelta(hours=1), tick=False):
        cluster_sync_from_snapshot(cluster=small_world, paths=[path])
        posture_evaluate()
    data = Node.objects.get(cluster=small_world, name="gpu-ts-1").data
    assert data["mig_config_state_since"] == start.isoformat()
    finding = Finding.objects.get(check_id="SHARE-009")
    assert finding.evidence["requested_mig_config"] == "all-1g.10gb"
    # Done: the state reads success, the times are cleared and the finding resolves.
    with time_machine.travel(start + timedelta(hours=2), tick=False):
        cluster_sync_from_snapshot(cluster=small_world, paths=[_mig_snapshot(tmp_path, "success")])
        posture_evaluate()
    assert Node.objects.get(name="gpu-ts-1").data["mig_config_state_since"] is None
    assert Finding.objects.get(check_id="SHARE-009").status == "resolved"
