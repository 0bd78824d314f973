"""Celery tasks for inventory: thin wrappers over the services the CLI calls (STYLE rule 3)."""

from __future__ import annotations

from celery import shared_task

from inventory.models import Cluster
from inventory.services import cluster_sync_from_snapshot
from inventory.sync import SyncError


@shared_task(acks_late=True)
def sync_cluster_snapshot(cluster_id: int, paths: list[str]) -> dict[str, object] | None:
    """Sync one cluster from snapshot files. A bad snapshot is not retried: it stays bad."""
    cluster = Cluster.objects.filter(pk=cluster_id).first()
    if cluster is None:
        return None  # deleted since it was queued
    try:
        run = cluster_sync_from_snapshot(cluster=cluster, paths=paths)
    except SyncError as exc:
        return {"status": "failed", "error": str(exc)}
    return {"status": run.status, "sync_run": run.pk}
