"""Real Celery worker processes for tests, on the Redis broker at 127.0.0.1:6379, each on its
own queue and against the test's database (tests/test_broker.py, tests/faults/)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

import pytest
from celery import Celery
from django.db import connection

REDIS = ("127.0.0.1", 6379)
BROKER = "redis://127.0.0.1:6379/15"
REPO = Path(__file__).resolve().parent.parent


def redis_available() -> bool:
    try:
        with socket.create_connection(REDIS, timeout=1):
            return True
    except OSError:
        return False


def new_queue() -> str:
    """A queue of this test's own on the shared broker, or a skip (a failure when
    GPUPOSTURE_REQUIRE_BROKER is set, as in CI) if Redis is not running."""
    if not redis_available():
        if os.environ.get("GPUPOSTURE_REQUIRE_BROKER"):
            pytest.fail("Redis is not reachable on 127.0.0.1:6379 but this run requires it")
        pytest.skip("Redis is not running on 127.0.0.1:6379 (CI starts it; so can you)")
    return f"gpuposture-test-{uuid.uuid4().hex[:8]}"


def database_url() -> str:
    """The URL of the test database this process uses, for the worker to use too."""
    s = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{Path(s['NAME']).resolve()}"
    user = quote(s.get("USER") or "")
    password = f":{quote(s['PASSWORD'])}" if s.get("PASSWORD") else ""
    return f"postgres://{user}{password}@{s['HOST']}:{s.get('PORT') or 5432}/{s['NAME']}"


class Worker:
    """A `celery worker` process on its own queue, against this test's database (or the
    DATABASE_URL given in `env`)."""

    def __init__(self, queue: str, **env: str) -> None:
        self.env = {
            **os.environ,
            "DATABASE_URL": env.pop("DATABASE_URL", None) or database_url(),
            "CELERY_BROKER_URL": BROKER,
            "CELERY_RESULT_BACKEND": BROKER,
            "CELERY_TASK_DEFAULT_QUEUE": queue,
            **env,
        }
        self.queue = queue
        # A node name of its own: remote control (inspect) must reach this worker only, not
        # another test's on the shared broker.
        self.nodename = f"{queue}@{socket.gethostname()}"
        self.process: subprocess.Popen[bytes] | None = None
        # A file, not a pipe: a chatty worker must never block on a full pipe buffer.
        self._output = tempfile.TemporaryFile()  # noqa: SIM115 - read in stop(), freed with us
        self.log = ""

    def start(self) -> Worker:
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "gpuposture",
                "worker",
                "-Q",
                self.queue,
                "-n",
                self.nodename,
                "--pool",
                "solo",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
                "--loglevel",
                "INFO",
            ],
            cwd=REPO,
            env=self.env,
            stdout=self._output,
            stderr=subprocess.STDOUT,
        )
        return self

    def stop(self, sig: int = signal.SIGTERM) -> str:
        if self.process and self.process.poll() is None:
            self.process.send_signal(sig)
        if self.process:
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=30)
            self._output.seek(0)
            self.log = self._output.read().decode(errors="replace")
        return self.log


def send(queue: str, task: str, **kwargs: object):
    # Not the current app: later tests' tasks must keep going through gpuposture's (eager).
    app = Celery(broker=BROKER, backend=BROKER, set_as_current=False)
    return app.send_task(task, kwargs=kwargs, queue=queue)


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.25)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")
