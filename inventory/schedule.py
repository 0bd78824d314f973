"""A periodic sync per cluster, held by django-celery-beat so beat (and the admin) see it."""

from __future__ import annotations

import json

from django_celery_beat.models import IntervalSchedule, PeriodicTask

from inventory.models import Cluster
from inventory.queue import SYNC_CLUSTER


def task_name(cluster: Cluster) -> str:
    return f"sync cluster {cluster.name}"


def cluster_schedule_update(*, cluster: Cluster) -> PeriodicTask | None:
    """Create, change or remove the cluster's periodic sync to match its interval (0: none).
    Snapshot clusters with no file to re-read are not scheduled."""
    schedulable = cluster.sync_interval_minutes > 0 and cluster.has_stored_source
    if not schedulable:
        PeriodicTask.objects.filter(name=task_name(cluster)).delete()
        return None
    interval, _ = IntervalSchedule.objects.get_or_create(
        every=cluster.sync_interval_minutes, period=IntervalSchedule.MINUTES
    )
    task, _ = PeriodicTask.objects.update_or_create(
        name=task_name(cluster),
        defaults={
            "task": SYNC_CLUSTER,
            "interval": interval,
            "kwargs": json.dumps({"cluster_id": cluster.pk, "trigger": "schedule"}),
            "enabled": True,
        },
    )
    return task


def cluster_schedule_remove(*, cluster: Cluster) -> None:
    PeriodicTask.objects.filter(name=task_name(cluster)).delete()


def cluster_schedule_summary(*, cluster: Cluster) -> str:
    """The cluster's scheduled sync in words, or why there is none."""
    task = (
        PeriodicTask.objects.filter(name=task_name(cluster), enabled=True)
        .select_related("interval")
        .first()
    )
    if task is not None and task.interval is not None:
        return f"every {task.interval.every} min, then a score"
    if cluster.sync_interval_minutes == 0:
        return "none (interval 0: manual syncs only)"
    return "none (no stored source to re-read)"
