"""The cluster pages: runs with progress, drift, and what a platform engineer can change."""

from __future__ import annotations

import pytest
from django.test import Client

from inventory.models import Cluster, SyncRun
from inventory.sync import sync_run_start

pytestmark = pytest.mark.django_db


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_cluster_page_shows_runs_and_a_running_runs_progress(small_world, personas):
    running = sync_run_start(cluster=small_world, source="kubeconfig x", trigger="page")
    SyncRun.objects.filter(pk=running.pk).update(progress={"Node": 2, "Pod": 3})
    page = client_for(personas["security_lead"]).get("/clusters/lab/").content.decode()
    assert f'data-sync-run="/api/v1/sync-runs/{running.pk}/"' in page
    assert "Pod 3" in page and "succeeded" in page
    assert "Sync now" not in page  # security leads read; platform engineers operate


def test_platform_engineer_edits_and_syncs_from_the_page(
    small_world, personas, django_capture_on_commit_callbacks
):
    client = client_for(personas["platform_engineer"])
    assert "Sync now" in client.get("/clusters/lab/").content.decode()
    response = client.post(
        "/clusters/lab/edit/",
        {
            "source": "snapshot",
            "sync_interval_minutes": 30,
            "snapshot_paths_text": "/etc/hostname",
            "description": "lab",
        },
    )
    assert response.status_code == 200 and "must be inside" in response.content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/clusters/lab/sync/")
    assert response.status_code == 302
    assert SyncRun.objects.filter(cluster=small_world, trigger="page").exists()


@pytest.mark.parametrize("persona", ["security_lead", "auditor", "viewer_alpha", "no_role"])
def test_others_cannot_change_clusters(small_world, personas, persona):
    client = client_for(personas[persona])
    assert client.get("/clusters/new/").status_code == 403
    assert client.post("/clusters/lab/sync/").status_code in (403, 404)
    assert client.post("/clusters/lab/edit/", {"sync_interval_minutes": 1}).status_code == 403
    assert Cluster.objects.get(name="lab").sync_interval_minutes == 60


def test_register_form_refuses_a_path_outside_the_kubeconfig_dir(personas, settings, tmp_path):
    settings.GPUPOSTURE_KUBECONFIG_DIR = tmp_path
    client = client_for(personas["platform_engineer"])
    response = client.post(
        "/clusters/new/",
        {
            "name": "east",
            "source": "kubeconfig",
            "kubeconfig_path": "/etc/shadow",
            "sync_interval_minutes": 60,
        },
    )
    assert "must be inside" in response.content.decode()
    assert not Cluster.objects.filter(name="east").exists()
