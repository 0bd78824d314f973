"""Real Celery workers on the Redis broker: a score, a sync that retries a transient error
and then scores, and a worker killed mid-sync whose task is delivered again and runs cleanly."""

from __future__ import annotations

import signal

import pytest

from inventory.models import SyncRun
from posture.models import PostureRun, TenantScore
from tests.workers import Worker, new_queue, send, wait_for

# serialized_rollback: the flush after each test would drop the data migrations' rows
# (roles, trust classes) that later tests rely on.
pytestmark = [pytest.mark.broker, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


@pytest.fixture
def queue() -> str:
    return new_queue()


def test_score_task_completes_through_a_real_worker(small_world, queue):
    worker = Worker(queue).start()
    runs_before = PostureRun.objects.count()
    try:
        outcome = send(queue, "posture.tasks.score").get(timeout=90)
    finally:
        log = worker.stop()
    assert outcome["status"] == "done", log
    run = PostureRun.objects.get(pk=outcome["posture_run"])
    assert PostureRun.objects.count() == runs_before + 1
    assert run.clusters == ["lab"]
    assert TenantScore.objects.filter(run=run).count() == 2
    assert "posture.tasks.score" in log and "succeeded" in log


def test_sync_retries_a_transient_error_then_scores(live_cluster, queue):
    cluster, api = live_cluster
    api.fail("/api/v1/nodes", status=503, times=1)
    worker = Worker(queue, GPUPOSTURE_SYNC_RETRY_BACKOFF="1").start()
    try:
        outcome = send(queue, "inventory.tasks.sync_cluster", cluster_id=cluster.pk).get(timeout=90)
        wait_for(lambda: PostureRun.objects.filter(finished_at__isnull=False).exists(), 60, "score")
    finally:
        log = worker.stop()
    assert outcome["status"] == "succeeded", log
    statuses = list(
        SyncRun.objects.filter(cluster=cluster).order_by("pk").values_list("status", "error")
    )
    assert [s for s, _ in statuses] == ["failed", "succeeded"]
    assert "HTTP 503" in statuses[0][1]
    assert "Retry in 1s" in log
    assert PostureRun.objects.get().clusters == ["live"]


def test_a_worker_killed_mid_sync_leads_to_a_clean_rerun(live_cluster, queue):
    cluster, api = live_cluster
    api.delay("/api/v1/pods", 120)  # the first worker is inside the pod list when it dies
    settings = {
        "GPUPOSTURE_SYNC_LEASE_SECONDS": "3",
        "CELERY_VISIBILITY_TIMEOUT": "4",
        "CELERY_RESTORE_INTERVAL": "1",
        "CELERY_RESTORE_THROTTLE": "1",
    }
    first = Worker(queue, **settings).start()
    second = Worker(queue, **settings)
    try:
        send(queue, "inventory.tasks.sync_cluster", cluster_id=cluster.pk)
        running = SyncRun.objects.filter(cluster=cluster, status="running")
        mid_sync = running.filter(progress__has_key="Node")
        wait_for(mid_sync.exists, 60, "the first worker to be mid-sync")
        first.stop(signal.SIGKILL)  # no ack was sent: acks_late keeps the task on the broker
        api.delay("/api/v1/pods", 0)
        interrupted = SyncRun.objects.get(cluster=cluster)
        assert interrupted.status == "running"
        second.start()
        wait_for(
            lambda: SyncRun.objects.filter(cluster=cluster, status="succeeded").exists(),
            90,
            "the task to be delivered again and succeed",
        )
    except AssertionError:
        raise AssertionError(f"second worker's log:\n{second.stop()}") from None
    finally:
        log = second.stop()
    interrupted.refresh_from_db()
    assert interrupted.status == "failed" and "interrupted" in interrupted.error, log
    assert SyncRun.objects.filter(cluster=cluster, status="succeeded").count() == 1
    assert cluster.pods.count() == 5
    cluster.refresh_from_db()
    assert cluster.sync_lock_token == ""  # the lease was released


def test_a_debounced_rescore_runs_once_on_a_worker_however_often_delivered(small_world, queue):
    from django.utils import timezone

    from posture.models import ClusterScoreState
    from posture.rescore import _mark_pending

    # What a burst of changes leaves: the cluster marked once (posture.rescore).
    assert _mark_pending([small_world.pk], timezone.now()) == [small_world.pk]
    assert _mark_pending([small_world.pk], timezone.now()) == []  # already waiting
    runs_before = PostureRun.objects.count()
    worker = Worker(queue).start()
    try:
        # The task and a duplicate of it (a redelivery after a lost ack, or a second request).
        first = send(queue, "posture.tasks.rescore", cluster_ids=[small_world.pk])
        second = send(queue, "posture.tasks.rescore", cluster_ids=[small_world.pk])
        outcomes = [first.get(timeout=90), second.get(timeout=90)]
    finally:
        log = worker.stop()
    assert [o["status"] for o in outcomes] == ["done", "skipped"], log
    assert PostureRun.objects.count() == runs_before + 1
    state = ClusterScoreState.objects.get(cluster=small_world)
    assert state.pending_since is None and state.last_scored_at is not None
