"""Celery tasks for inventory: thin wrappers over the services the CLI calls (STYLE rule 3)."""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings

from inventory import queue
from inventory.bulletins.imports import bulletin_import_run, bulletins_import_recorded
from inventory.models import BulletinImport, Cluster, SyncRun
from inventory.services import SyncBusy, cluster_sync, sync_run_abandon
from inventory.sync import SyncError
from inventory.sync_lease import lease_remaining_seconds

logger = logging.getLogger(__name__)

MAX_RETRIES = 4


@shared_task(
    name=queue.SYNC_CLUSTER,
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    max_retries=MAX_RETRIES,
)
def sync_cluster(
    self,
    cluster_id: int,
    trigger: str = "schedule",
    run_id: int | None = None,
    done_after_run: int | None = None,
) -> dict[str, object]:
    """Sync one cluster, then score it. Transient failures (5xx, timeouts, refused
    connections) retry with backoff; 403, bad credentials and bad input do not. Redelivery
    after a killed worker is harmless: the cluster's lease lets only one sync run, and a task
    that found the cluster busy skips its retry if a sync newer than `done_after_run` has
    succeeded since (a redelivered copy of the same task did the work). Whatever else goes
    wrong, the run it was asked to do does not stay "running"."""
    try:
        return _sync_cluster(self, cluster_id, trigger, run_id, done_after_run)
    except BaseException as exc:
        # cluster_sync records its own failures (a conditional update keeps that reason);
        # this covers a crash around it, e.g. before the run was handed over.
        if run_id is not None:
            error = f"the sync task failed: {type(exc).__name__}: {exc}"
            sync_run_abandon(run=SyncRun(pk=run_id), error=error)
        raise


def _sync_cluster(
    self, cluster_id: int, trigger: str, run_id: int | None, done_after_run: int | None
) -> dict[str, object]:
    cluster = Cluster.objects.filter(pk=cluster_id).first()
    if cluster is None:
        return {"status": "skipped", "reason": "cluster no longer exists"}
    if done_after_run is not None and _synced_since(cluster, done_after_run):
        return {"status": "skipped", "reason": "another worker synced the cluster meanwhile"}
    task_id = self.request.id or ""
    if (
        task_id
        and SyncRun.objects.filter(task_id=task_id, status=SyncRun.Status.SUCCEEDED).exists()
    ):
        return {"status": "skipped", "reason": "this task already synced (a redelivered copy)"}
    run = SyncRun.objects.filter(pk=run_id).first() if run_id else None
    try:
        run = cluster_sync(cluster=cluster, trigger=trigger, run=run)
    except SyncBusy as exc:
        # Another sync holds the lease: a live one finishes, a dead worker's lease expires.
        # Either way try once more after the lease, so a redelivered task still runs.
        if _may_retry(self):
            countdown = int(lease_remaining_seconds(cluster=cluster)) + 5
            latest = SyncRun.objects.filter(cluster=cluster).order_by("-pk").first()
            kwargs = {**self.request.kwargs, "done_after_run": latest.pk if latest else 0}
            raise self.retry(countdown=countdown, exc=exc, kwargs=kwargs) from exc
        return {"status": "skipped", "reason": str(exc)}
    except SyncError as exc:
        if exc.retryable and _may_retry(self):
            backoff = settings.GPUPOSTURE_SYNC_RETRY_BACKOFF
            countdown = backoff[min(self.request.retries, len(backoff) - 1)]
            logger.info("sync of %s will retry in %s s: %s", cluster.name, countdown, exc)
            raise self.retry(countdown=countdown, exc=exc) from exc
        return {"status": "failed", "error": str(exc), "retryable": exc.retryable}
    if task_id:
        SyncRun.objects.filter(pk=run.pk).update(task_id=task_id)
    return {"status": run.status, "sync_run": run.pk}


def _synced_since(cluster: Cluster, run_pk: int) -> bool:
    return SyncRun.objects.filter(
        cluster=cluster, status=SyncRun.Status.SUCCEEDED, pk__gt=run_pk
    ).exists()


def _may_retry(task) -> bool:
    # Run in-process (no broker, `make demo`), a retry would block the caller: report instead.
    return not task.request.is_eager and task.request.retries < MAX_RETRIES


@shared_task(name=queue.IMPORT_BULLETIN_URLS, acks_late=True, reject_on_worker_lost=True)
def import_bulletin_urls(import_id: int) -> dict[str, object]:
    """Run a URL import requested from the page or the API (it re-scores when a bulletin
    changed). Redelivered after a killed worker, it runs again: imports are idempotent and the
    row is still `running`."""
    record = BulletinImport.objects.filter(pk=import_id).first()
    if record is None:
        return {"status": "skipped", "reason": "import no longer exists"}
    result = bulletin_import_run(record=record)
    if result is None:
        return {"status": "skipped", "reason": f"import already {record.status}"}
    return {"status": record.status, "counts": record.counts}


@shared_task(name=queue.POLL_BULLETIN_FEEDS, acks_late=True)
def poll_bulletin_feeds() -> dict[str, object]:
    """Import the vendor feeds the deployment names (GPUPOSTURE_BULLETIN_FEEDS), on beat."""
    urls = list(settings.GPUPOSTURE_BULLETIN_FEEDS)
    if not urls:
        return {"status": "skipped", "reason": "no feeds configured"}
    record, _result = bulletins_import_recorded(trigger="schedule", urls=urls)
    return {"status": record.status, "counts": record.counts}
