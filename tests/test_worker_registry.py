"""A real `celery -A gpuposture worker` registers every task that anything may send it: the beat
schedule (settings and the per-cluster entries django-celery-beat holds), the names the code
sends by string, and every task defined in an installed app's tasks module. A task missing
here is one a deployment's worker rejects as unregistered."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest
from celery import Celery, Task
from django.apps import apps
from django.conf import settings
from django_celery_beat.models import PeriodicTask

from inventory.models import Cluster
from inventory.schedule import cluster_schedule_update
from tests.workers import BROKER, REPO, Worker, new_queue, wait_for

pytestmark = [pytest.mark.broker, pytest.mark.django_db]

# A task named in a string: "app.tasks.name" (signature(...), send_task(...), beat entries).
TASK_NAME = re.compile(r"""["']((?:[a-z_][a-z0-9_]*\.)+tasks\.[a-z_][a-z0-9_]*)["']""")
SEND_TASK = re.compile(r"""send_task\(\s*["']([^"']+)["']""")
NOT_SHIPPED = {".venv", "tests", "var", "static", "node_modules", ".git"}


def names_in_source() -> set[str]:
    """Task names written as strings anywhere in the shipped code (tests excluded: they send
    names on purpose, some of them wrong)."""
    found: set[str] = set()
    for path in REPO.rglob("*.py"):
        if NOT_SHIPPED & set(path.relative_to(REPO).parts):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        found |= set(TASK_NAME.findall(text)) | set(SEND_TASK.findall(text))
    return found


def names_defined_by_apps() -> set[str]:
    """Every task object in the tasks module of an installed app of this repository."""
    found: set[str] = set()
    for config in apps.get_app_configs():
        if not Path(config.path).is_relative_to(REPO):
            continue
        try:
            module = importlib.import_module(f"{config.name}.tasks")
        except ModuleNotFoundError as exc:
            if exc.name != f"{config.name}.tasks":
                raise
            continue
        found |= {obj.name for obj in vars(module).values() if isinstance(obj, Task)}
    return found


def names_scheduled() -> set[str]:
    """The beat schedule in settings and the periodic syncs inventory.schedule writes."""
    cluster = Cluster.objects.create(name="lab", snapshot_paths=["/tmp/lab.json"])  # noqa: S108
    assert cluster_schedule_update(cluster=cluster) is not None
    beat: set[str] = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    return beat | set(PeriodicTask.objects.values_list("task", flat=True))


def registered_by(worker: Worker) -> set[str]:
    # Not the current app: tests after this one must keep sending through gpuposture's.
    control = Celery(broker=BROKER, set_as_current=False).control
    answer: dict[str, list[str]] = {}

    def replied() -> bool:
        answer.update(control.inspect(destination=[worker.nodename], timeout=1).registered() or {})
        return worker.nodename in answer

    wait_for(replied, 60, f"{worker.nodename} to answer `inspect registered`")
    return set(answer[worker.nodename])


def test_a_real_worker_registers_every_task_anything_sends():
    scheduled, named, defined = names_scheduled(), names_in_source(), names_defined_by_apps()
    # The scans find what we know is there (so an empty scan cannot pass).
    assert {
        "telemetry.tasks.read_telemetry_sources",
        "telemetry.tasks.rollup_telemetry",
        "inventory.tasks.sync_cluster",
    } <= scheduled
    assert {"posture.tasks.rescore_sweep", "inventory.tasks.poll_bulletin_feeds"} <= named
    assert {"inventory.tasks.import_bulletin_urls", "telemetry.tasks.rollup_telemetry"} <= defined
    worker = Worker(new_queue()).start()
    try:
        registered = registered_by(worker)
    finally:
        log = worker.stop()
    expected = scheduled | named | defined
    assert not expected - registered, (sorted(expected - registered), log[-2000:])
