"""Celery tasks (eager here; tests/test_broker.py runs them on a real worker): retries only
where retrying helps, a score after each good sync, one periodic sync per cluster."""

from __future__ import annotations

import json

import pytest
from django_celery_beat.models import PeriodicTask

from inventory.models import SyncRun
from inventory.schedule import cluster_schedule_update
from inventory.tasks import sync_cluster
from posture.models import PostureRun

pytestmark = pytest.mark.django_db


def test_sync_task_scores_after_a_good_sync(live_cluster, django_capture_on_commit_callbacks):
    cluster, _ = live_cluster
    # The re-score is asked for on commit (posture.rescore); the test's transaction never
    # commits, so run what a commit would.
    with django_capture_on_commit_callbacks(execute=True):
        result = sync_cluster.delay(cluster.pk, trigger="api").get()
    assert result["status"] == "succeeded"
    assert [run.clusters for run in PostureRun.objects.all()] == [["live"]]


def test_a_transient_error_in_process_is_reported_not_waited_for(live_cluster):
    # With a broker it is retried with backoff (tests/test_broker.py); in-process it is
    # recorded and reported, so a page that asked for the sync is not blocked.
    cluster, api = live_cluster
    api.fail("/api/v1/nodes", status=503, times=1)
    result = sync_cluster.delay(cluster.pk).get()
    assert result["status"] == "failed" and result["retryable"] is True
    assert SyncRun.objects.get(cluster=cluster).status == "failed"


def test_403_is_not_retried(live_cluster):
    cluster, api = live_cluster
    api.forbid("/api/v1/pods")
    result = sync_cluster.delay(cluster.pk).get()
    assert result["status"] == "failed" and result["retryable"] is False
    assert SyncRun.objects.filter(cluster=cluster).count() == 1
    assert not PostureRun.objects.exists()


def test_a_redelivered_copy_of_a_task_that_synced_is_skipped(live_cluster):
    cluster, _ = live_cluster
    first = sync_cluster.apply(kwargs={"cluster_id": cluster.pk}, task_id="t-1").get()
    assert first["status"] == "succeeded"
    again = sync_cluster.apply(kwargs={"cluster_id": cluster.pk}, task_id="t-1").get()
    assert again == {"status": "skipped", "reason": "this task already synced (a redelivered copy)"}
    # A retry that found the cluster busy skips when a newer sync succeeded meanwhile.
    newer = sync_cluster.apply(
        kwargs={"cluster_id": cluster.pk, "done_after_run": first["sync_run"] - 1}, task_id="t-2"
    ).get()
    assert newer["status"] == "skipped"
    assert SyncRun.objects.filter(cluster=cluster).count() == 1


def test_a_deleted_cluster_is_skipped():
    assert sync_cluster.delay(999_999).get()["status"] == "skipped"


def test_a_held_lease_blocks_a_second_sync(live_cluster):
    from inventory.services import SyncBusy, cluster_sync
    from inventory.sync_lease import cluster_lock_acquire

    cluster, _ = live_cluster
    assert cluster_lock_acquire(cluster=cluster)  # another worker holds the cluster
    with pytest.raises(SyncBusy):
        cluster_sync(cluster=cluster)
    assert cluster_lock_acquire(cluster=cluster) is None  # still held: conditional UPDATE


def test_each_cluster_gets_an_editable_periodic_sync(live_cluster):
    cluster, _ = live_cluster
    task = cluster_schedule_update(cluster=cluster)
    assert task.task == "inventory.tasks.sync_cluster" and task.interval.every == 60
    assert json.loads(task.kwargs) == {"cluster_id": cluster.pk, "trigger": "schedule"}
    cluster.sync_interval_minutes = 15
    cluster.save()
    assert cluster_schedule_update(cluster=cluster).interval.every == 15
    assert PeriodicTask.objects.filter(task="inventory.tasks.sync_cluster").count() == 1
    cluster.sync_interval_minutes = 0
    cluster.save()
    assert cluster_schedule_update(cluster=cluster) is None
    assert not PeriodicTask.objects.filter(task="inventory.tasks.sync_cluster").exists()
