"""Celery tasks for posture: thin wrappers over posture.services (STYLE rule 3)."""

from __future__ import annotations

from celery import shared_task

from inventory.models import Cluster
from posture import queue
from posture.rescore import rescore_now, rescore_run
from posture.rescore import rescore_sweep as sweep


@shared_task(name=queue.SCORE, acks_late=True)
def score(cluster_id: int | None = None) -> dict[str, object]:
    """Evaluate the checks (one cluster, or all) and score every tenant, now."""
    clusters = None
    if cluster_id is not None:
        clusters = list(Cluster.objects.filter(pk=cluster_id))
        if not clusters:
            return {"status": "skipped", "reason": "cluster no longer exists"}
    run = rescore_now(clusters=clusters)
    return {"status": "done", "posture_run": run.pk, "counts": run.counts}


@shared_task(name=queue.RESCORE, acks_late=True, reject_on_worker_lost=True)
def rescore(cluster_ids: list[int]) -> dict[str, object]:
    """The debounced re-score (posture.rescore): score the clusters still pending. A
    redelivered or duplicate copy finds them claimed already and does nothing."""
    run = rescore_run(cluster_ids=cluster_ids)
    if run is None:
        return {"status": "skipped", "reason": "already re-scored"}
    return {"status": "done", "posture_run": run.pk, "clusters": run.clusters}


@shared_task(name=queue.RESCORE_SWEEP, acks_late=True)
def rescore_sweep() -> dict[str, object]:
    """On beat: re-score clusters an expiry moved, and re-enqueue lost re-scores."""
    return {"status": "done", "enqueued": sweep()}
