"""Registering clusters through the API: how to reach them (never a credential), a periodic
sync, and starting a sync that answers with its run."""

from __future__ import annotations

import copy

import pytest
from django_celery_beat.models import PeriodicTask

from inventory.models import Cluster, SyncRun
from tests.conftest import api_client, load_json
from tests.kubeapi import FakeKubeAPI

pytestmark = pytest.mark.django_db


@pytest.fixture
def dirs(settings, tmp_path):
    settings.GPUPOSTURE_KUBECONFIG_DIR = tmp_path / "kubeconfigs"
    settings.GPUPOSTURE_SNAPSHOT_DIR = tmp_path / "snapshots"
    settings.GPUPOSTURE_KUBECONFIG_DIR.mkdir()
    settings.GPUPOSTURE_SNAPSHOT_DIR.mkdir()
    return settings.GPUPOSTURE_KUBECONFIG_DIR, settings.GPUPOSTURE_SNAPSHOT_DIR


@pytest.fixture
def fake_api():
    with FakeKubeAPI(copy.deepcopy(load_json("small-cluster.json")["items"])) as api:
        yield api


def register(client, **body):
    return client.post("/api/v1/clusters/", body, format="json")


def test_platform_engineer_registers_a_kubeconfig_cluster(personas, dirs, fake_api):
    kubeconfig = fake_api.kubeconfig(dirs[0])
    client = api_client(personas["platform_engineer"])
    response = register(
        client,
        name="east",
        source="kubeconfig",
        kubeconfig_path=kubeconfig.name,
        kube_context="fake",
        sync_interval_minutes=15,
    )
    assert response.status_code == 201, response.json()
    cluster = Cluster.objects.get(name="east")
    assert cluster.kubeconfig_path == str(kubeconfig.resolve())
    task = PeriodicTask.objects.get(name="sync cluster east")
    assert task.interval.every == 15 and task.enabled
    # The record holds a path and a context name: no token anywhere in the database row.
    assert "fake-token-not-secret" not in str(Cluster.objects.filter(name="east").values().get())
    patched = client.patch("/api/v1/clusters/east/", {"sync_interval_minutes": 0}, format="json")
    assert patched.status_code == 200
    assert not PeriodicTask.objects.filter(name="sync cluster east").exists()


@pytest.mark.parametrize(
    "body, field",
    [
        ({"source": "kubeconfig", "kubeconfig_path": "/etc/passwd"}, "kubeconfig_path"),
        ({"source": "kubeconfig", "kubeconfig_path": "../../etc/passwd"}, "kubeconfig_path"),
        ({"source": "kubeconfig", "kubeconfig_path": "missing.yaml"}, "kubeconfig_path"),
        ({"source": "snapshot", "snapshot_paths": ["/etc/hostname"]}, "snapshot_paths"),
        ({"source": "in_cluster", "kubeconfig_path": "x"}, "kubeconfig_path"),
        ({"source": "in_cluster", "name": "Bad Name"}, "name"),
        ({"source": "teleport"}, "source"),
    ],
)
def test_hostile_or_wrong_reach_settings_are_refused(personas, dirs, body, field):
    client = api_client(personas["platform_engineer"])
    response = register(client, **{"name": "c1", **body})
    assert response.status_code == 400
    assert field in str(response.json()["errors"])
    assert not Cluster.objects.exists()


def test_only_platform_engineers_write_clusters(personas, dirs):
    for persona in ("security_lead", "auditor", "procurement", "viewer_alpha", "no_role"):
        response = register(api_client(personas[persona]), name="c2", source="in_cluster")
        assert response.status_code == 403, persona


def test_sync_now_answers_the_run(personas, dirs, fake_api, django_capture_on_commit_callbacks):
    client = api_client(personas["platform_engineer"])
    kubeconfig = fake_api.kubeconfig(dirs[0])
    register(
        client,
        name="east",
        source="kubeconfig",
        kubeconfig_path=str(kubeconfig),
        kube_context="fake",
    )
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/api/v1/clusters/east/sync/")
    assert response.status_code == 202
    run = SyncRun.objects.get(pk=response.json()["id"])
    assert run.trigger == "api" and run.status == "succeeded"  # in-process: already done
    assert client.get(f"/api/v1/sync-runs/{run.pk}/").json()["progress"]["Pod"] == 5
    assert client.get("/api/v1/sync-runs/?cluster=east").json()["count"] == 1
    assert api_client(personas["auditor"]).post("/api/v1/clusters/east/sync/").status_code == 403


def test_sync_now_while_a_sync_runs_is_a_conflict(personas, dirs):
    from inventory.sync_lease import cluster_lock_acquire

    client = api_client(personas["platform_engineer"])
    register(client, name="busy", source="in_cluster")
    cluster_lock_acquire(cluster=Cluster.objects.get(name="busy"))
    response = client.post("/api/v1/clusters/busy/sync/")
    assert response.status_code == 409 and "already running" in response.json()["detail"]
