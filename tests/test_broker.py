"""A real Celery worker process on the Redis broker runs the `score` task end to end."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import uuid
from pathlib import Path
from urllib.parse import quote

import pytest
from celery import Celery
from django.db import connection

from posture.models import PostureRun, TenantScore

REDIS = ("127.0.0.1", 6379)
REPO = Path(__file__).resolve().parent.parent


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


@pytest.fixture
def broker():
    if not redis_available():
        if os.environ.get("GPUPOSTURE_REQUIRE_BROKER"):
            pytest.fail("Redis is not reachable on 127.0.0.1:6379 but this run requires it")
        pytest.skip("Redis is not running on 127.0.0.1:6379 (CI starts it; so can you)")
    return "redis://127.0.0.1:6379/15"


@pytest.mark.broker
@pytest.mark.django_db(transaction=True)
def test_score_task_completes_through_a_real_worker(small_world, broker):
    queue = f"gpuposture-test-{uuid.uuid4().hex[:8]}"
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "CELERY_BROKER_URL": broker,
        "CELERY_RESULT_BACKEND": broker,
    }
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "gpuposture", "worker", "-Q", queue,
         "--pool", "solo", "--without-gossip", "--without-mingle", "--without-heartbeat",
         "--loglevel", "INFO"],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    runs_before = PostureRun.objects.count()
    client = Celery(broker=broker, backend=broker)
    try:
        result = client.send_task("posture.tasks.score", kwargs={}, queue=queue)
        outcome = result.get(timeout=90)
    finally:
        worker.terminate()
        log, _ = worker.communicate(timeout=30)
    assert outcome["status"] == "done", log
    run = PostureRun.objects.get(pk=outcome["posture_run"])
    assert PostureRun.objects.count() == runs_before + 1
    assert run.clusters == ["lab"]
    assert TenantScore.objects.filter(run=run).count() == 2
    assert "posture.tasks.score" in log and "succeeded" in log
