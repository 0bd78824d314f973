"""A PostgreSQL restart is survived by the web server and the Celery worker: the first
request and the first task after it succeed, without restarting either process (Django
checks a kept connection before reusing it: CONN_HEALTH_CHECKS). Runs its own throwaway
PostgreSQL server; the shared one on 5432 is never touched."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
import uuid

import pytest

from tests.faults.postgres import ThrowawayPostgres, postgres_bin
from tests.faults.switch import free_port
from tests.workers import BROKER, REPO, Worker, new_queue, send, wait_for

pytestmark = pytest.mark.slow_fault


def get(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=20) as response:  # noqa: S310 - 127.0.0.1
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def database_ready(base: str) -> tuple[int, str]:
    code, body = get(f"{base}/readyz")
    return code, body.get("database", "")


def answers(url: str) -> bool:
    try:
        return get(url)[0] == 200
    except OSError:
        return False


@pytest.fixture
def postgres():
    bin_dir = postgres_bin()
    if bin_dir is None:
        pytest.skip("PostgreSQL server binaries (initdb, pg_ctl) are not installed")
    server = ThrowawayPostgres(bin_dir)
    try:
        yield server.start()
    finally:
        server.stop()


def test_web_and_worker_survive_a_postgresql_restart(postgres):
    queue = new_queue()
    database = f"faults_{uuid.uuid4().hex[:8]}"
    postgres.create_database(database)
    env = {
        **os.environ,
        "DATABASE_URL": postgres.url(database),
        "SECRET_KEY": "faults-only",
        "ALLOWED_HOSTS": "127.0.0.1",
        "SECURE_SSL_REDIRECT": "0",
        "DEBUG": "0",
        "CELERY_BROKER_URL": BROKER,
        "CELERY_RESULT_BACKEND": BROKER,
    }
    env.pop("SQLITE_TEST_NAME", None)
    migrate = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert migrate.returncode == 0, migrate.stdout + migrate.stderr

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    # One sync worker process: every request reuses the one kept database connection.
    web = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "gpuposture.wsgi",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "1",
            "--timeout",
            "60",
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    worker = Worker(queue, DATABASE_URL=env["DATABASE_URL"], SECRET_KEY=env["SECRET_KEY"]).start()
    try:
        wait_for(lambda: answers(f"{base}/healthz"), 60, "the web server to answer")
        assert database_ready(base) == (200, "up")
        before = send(queue, "posture.tasks.score").get(timeout=90)
        assert before["status"] == "done"

        postgres.restart()  # every session to the database is cut

        assert web.poll() is None and worker.process and worker.process.poll() is None
        # The very first request and task after the restart succeed: no failed attempt.
        assert database_ready(base) == (200, "up")
        assert get(f"{base}/healthz") == (200, {"status": "ok"})
        after = send(queue, "posture.tasks.score").get(timeout=90)
        assert after["status"] == "done", worker.stop()
        assert after["posture_run"] > before["posture_run"]  # a new row was written
        assert worker.process.poll() is None
    finally:
        web.terminate()
        try:
            web.wait(timeout=30)
        except subprocess.TimeoutExpired:
            web.kill()
        worker.stop()
