"""Real Celery workers on the Redis broker: a score, a sync that retries a transient error
and then scores, and a worker killed mid-sync whose task is delivered again and runs cleanly."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

import pytest
from celery import Celery
from django.db import connection

from inventory.models import SyncRun
from posture.models import PostureRun, TenantScore

REDIS = ("127.0.0.1", 6379)
BROKER = "redis://127.0.0.1:6379/15"
REPO = Path(__file__).resolve().parent.parent

# serialized_rollback: the flush after each test would drop the data migrations' rows
# (roles, trust classes) that later tests rely on.
pytestmark = [pytest.mark.broker, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def redis_available() -> bool:
    try:
        with socket.create_connection(REDIS, timeout=1):
            return True
    except OSError:
        return False


def database_url() -> str:
    """The URL of the test database this process uses, for the worker to use too."""
    s = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{Path(s['NAME']).resolve()}"
    user = quote(s.get("USER") or "")
    password = f":{quote(s['PASSWORD'])}" if s.get("PASSWORD") else ""
    return f"postgres://{user}{password}@{s['HOST']}:{s.get('PORT') or 5432}/{s['NAME']}"


class Worker:
    """A `celery worker` process on its own queue, against this test's database."""

    def __init__(self, queue: str, **env: str) -> None:
        self.env = {
            **os.environ, "DATABASE_URL": database_url(), "CELERY_BROKER_URL": BROKER,
            "CELERY_RESULT_BACKEND": BROKER, "CELERY_TASK_DEFAULT_QUEUE": queue, **env,
        }  # fmt: skip
        self.queue = queue
        self.process: subprocess.Popen[str] | None = None
        self.log = ""

    def start(self) -> Worker:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "gpuposture", "worker", "-Q", self.queue,
             "--pool", "solo", "--without-gossip", "--without-mingle", "--without-heartbeat",
             "--loglevel", "INFO"],
            cwd=REPO, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        return self

    def stop(self, sig: int = signal.SIGTERM) -> str:
        if self.process and self.process.poll() is None:
            self.process.send_signal(sig)
        if self.process:
            out, _ = self.process.communicate(timeout=30)
            self.log += out or ""
        return self.log


@pytest.fixture
def queue() -> str:
    if not redis_available():
        if os.environ.get("GPUPOSTURE_REQUIRE_BROKER"):
            pytest.fail("Redis is not reachable on 127.0.0.1:6379 but this run requires it")
        pytest.skip("Redis is not running on 127.0.0.1:6379 (CI starts it; so can you)")
    return f"gpuposture-test-{uuid.uuid4().hex[:8]}"


def send(queue: str, task: str, **kwargs: object):  # type: ignore[no-untyped-def]
    return Celery(broker=BROKER, backend=BROKER).send_task(task, kwargs=kwargs, queue=queue)


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.25)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


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
        "GPUPOSTURE_SYNC_LEASE_SECONDS": "3", "CELERY_VISIBILITY_TIMEOUT": "4",
        "CELERY_RESTORE_INTERVAL": "1", "CELERY_RESTORE_THROTTLE": "1",
    }  # fmt: skip
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
            90, "the task to be delivered again and succeed",
        )  # fmt: skip
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
