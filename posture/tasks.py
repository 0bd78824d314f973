"""Celery tasks for posture: thin wrappers over posture.services (STYLE rule 3)."""

from __future__ import annotations

from celery import shared_task

from inventory.models import Cluster
from posture.services import posture_evaluate


@shared_task(acks_late=True)
def score(cluster_id: int | None = None) -> dict[str, object]:
    """Evaluate the checks (one cluster, or all) and score every tenant."""
    clusters = None
    if cluster_id is not None:
        clusters = list(Cluster.objects.filter(pk=cluster_id))
        if not clusters:
            return {"status": "skipped", "reason": "cluster no longer exists"}
    run = posture_evaluate(clusters=clusters)
    return {"status": "done", "posture_run": run.pk, "counts": run.counts}
