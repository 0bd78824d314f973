"""The Celery app. Without CELERY_BROKER_URL tasks run eagerly, in-process."""

from __future__ import annotations

import logging
import os

from celery import Celery, Task
from celery.signals import task_failure, task_postrun, task_prerun, worker_ready

from gpuposture.base import metrics, queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpuposture.settings")

app = Celery("gpuposture")
app.config_from_object("django.conf:settings", namespace="CELERY")
# Every installed app's tasks module (Django's app registry, read lazily): a list written here
# once missed telemetry, so a real worker rejected beat's telemetry tasks as unregistered.
app.autodiscover_tasks()

logger = logging.getLogger(__name__)


def _task_named(name: str) -> Task:
    """The registered task `name`. A worker imports every app's tasks module at start; a web or
    CLI process, which enqueues (or runs eagerly, with no broker), discovers them on first use,
    so no app imports its tasks module (that imports its services) to send work."""
    if name not in app.tasks:
        app.autodiscover_tasks(force=True)
    return app.tasks[name]


queue.task_lookup_register(_task_named)


# Task durations and failures for Prometheus (gpuposture.base.metrics); eager tasks count too.
@task_prerun.connect
def _task_prerun(task_id: str | None = None, **_: object) -> None:
    if task_id:
        metrics.task_started(task_id)


@task_postrun.connect
def _task_postrun(
    task_id: str | None = None, task: object = None, state: str | None = None, **_: object
) -> None:
    if task_id and task is not None:
        metrics.task_finished(task_id, getattr(task, "name", "unknown"))
        # An eager task whose exception propagates to its caller ends with no state and never
        # sends task_failure (a worker's failures do): count it here.
        if state is None:
            metrics.task_failed(getattr(task, "name", "unknown"))


@task_failure.connect
def _task_failure(sender: object = None, **_: object) -> None:
    metrics.task_failed(getattr(sender, "name", "unknown"))


@worker_ready.connect
def _serve_worker_metrics(**_: object) -> object:
    """With GPUPOSTURE_WORKER_METRICS_PORT set, a worker serves its own /metrics (with the
    prefork pool, set PROMETHEUS_MULTIPROC_DIR too, or the children's values are not seen)."""
    from django.conf import settings

    port = settings.GPUPOSTURE_WORKER_METRICS_PORT
    if not port:
        return None
    if not settings.GPUPOSTURE_METRICS_TOKEN:
        logger.warning("GPUPOSTURE_WORKER_METRICS_PORT is set but no metrics token: not served")
        return None
    return metrics.serve_worker_metrics(
        port=port,
        addr=settings.GPUPOSTURE_WORKER_METRICS_ADDR,
        token=settings.GPUPOSTURE_METRICS_TOKEN,
    )
