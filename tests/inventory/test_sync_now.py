"""The "Sync now" button and its API say what happened: without a broker the sync runs
in-process and has ended by the answer (succeeded with what it read, or failed and why); with
one it is queued or running. Transactional tests: a request's on_commit runs the task before the
answer, as in production (a test transaction would hold it back until after)."""

from __future__ import annotations

import html

import pytest
from django.test import Client

from inventory.models import Cluster, SyncRun
from tests.conftest import api_client

BROKEN_PATH = "/nonexistent/lab.json"
transactional = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def sync_from_page(user) -> tuple[str, SyncRun]:
    client = Client()
    client.force_login(user)
    response = client.post("/clusters/lab/sync/", follow=True)
    assert response.status_code == 200
    return html.unescape(response.content.decode()), SyncRun.objects.latest("pk")


def break_the_stored_source() -> None:
    Cluster.objects.filter(name="lab").update(snapshot_paths=[BROKEN_PATH])


@transactional
def test_the_page_says_a_sync_succeeded_with_what_it_read(small_world, personas):
    page, run = sync_from_page(personas["platform_engineer"])
    assert run.status == "succeeded" and run.trigger == "page"
    assert f"Sync run {run.pk} succeeded in" in page and "Node 2, Pod 5" in page
    assert "started" not in page


@transactional
def test_the_page_says_a_sync_failed_and_why(small_world, personas):
    break_the_stored_source()
    page, run = sync_from_page(personas["platform_engineer"])
    assert run.status == "failed"
    assert f"Sync run {run.pk} failed: the snapshot could not be read: {BROKEN_PATH}" in page
    assert "started" not in page and "succeeded in" not in page


@transactional
def test_the_api_answers_a_finished_run_with_its_outcome(small_world, personas):
    client = api_client(personas["platform_engineer"])
    response = client.post("/api/v1/clusters/lab/sync/")
    assert response.status_code == 200  # ended, not "accepted for later"
    assert response.json()["status"] == "succeeded" and response.json()["counts"]["Node"] == 2
    break_the_stored_source()
    response = client.post("/api/v1/clusters/lab/sync/")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "failed" and BROKEN_PATH in body["error"]


@pytest.mark.django_db
def test_a_sync_handed_to_a_worker_is_reported_queued(
    small_world, personas, django_capture_on_commit_callbacks
):
    # The callbacks are held back: the task has not run when the answer is made.
    with django_capture_on_commit_callbacks(execute=False):
        page, run = sync_from_page(personas["platform_engineer"])
    assert run.status == "running"
    assert f"Sync run {run.pk} is queued or running" in page
    with django_capture_on_commit_callbacks(execute=False):
        response = api_client(personas["platform_engineer"]).post("/api/v1/clusters/lab/sync/")
    assert response.status_code == 202 and response.json()["status"] == "running"


def forget_the_stored_source() -> None:
    # As `sync_cluster --snapshot FILE` leaves a cluster: read once, nothing stored.
    Cluster.objects.filter(name="lab").update(snapshot_paths=[])


@transactional
def test_a_cluster_with_nothing_to_re_read_is_not_made_stale_by_a_click(small_world, personas):
    forget_the_stored_source()
    runs = SyncRun.objects.count()
    page, _ = sync_from_page(personas["platform_engineer"])
    assert "lab has no stored source to re-read" in page
    assert "manage.py sync_cluster --cluster lab --snapshot FILE" in page
    assert SyncRun.objects.count() == runs  # no failed run: the last good sync still stands
    assert "last sync failed" not in page.lower()


@transactional
def test_the_api_refuses_a_sync_of_a_cluster_with_nothing_to_re_read(small_world, personas):
    forget_the_stored_source()
    runs = SyncRun.objects.count()
    response = api_client(personas["platform_engineer"]).post("/api/v1/clusters/lab/sync/")
    assert response.status_code == 409
    assert "no stored source to re-read" in response.json()["detail"]
    assert SyncRun.objects.count() == runs


@pytest.mark.django_db
def test_the_page_offers_sync_now_only_where_a_sync_can_read_something(small_world, personas):
    client = Client()
    client.force_login(personas["platform_engineer"])
    assert "Sync now</button>" in client.get("/clusters/lab/").content.decode()
    forget_the_stored_source()
    page = html.unescape(client.get("/clusters/lab/").content.decode())
    assert "Sync now</button>" not in page
    assert "No stored source to re-read: this cluster was synced from snapshot files" in page
