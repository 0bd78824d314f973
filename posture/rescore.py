"""Keeping scores current: the debounced re-score of the clusters a change touched.

Callers ask through `gpuposture.base.rescore.rescore_request` (any layer may); on commit it
reaches `rescore_dispatch` here, which marks each cluster "re-score pending since" with a
conditional UPDATE and enqueues one task for the clusters it newly marked, `countdown`
seconds later. Changes arriving while a cluster is pending only find it marked, so a burst
of edits makes one re-score. The task claims the clusters it still finds pending (another
conditional UPDATE, so a redelivered or duplicate task does nothing) and scores them through
`rescore_now`, the one function every score goes through (CLI, demo, tasks).

Eager (no broker: the demo, tests) the countdown is ignored and the re-score runs on commit,
in the request. A marker left by a lost enqueue (queue down) is picked up again by the
periodic sweep (`rescore_sweep`) once older than the grace period.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from gpuposture.base.queue import QueueUnavailable
from gpuposture.base.rescore import RescoreScope, rescore_request
from inventory.models import Cluster
from posture.bulletin_effects import bulletin_imports_effects_record
from posture.models import ClusterScoreState, PostureRun
from posture.queue import enqueue_rescore
from posture.rescore_due import clusters_due
from posture.run_hooks import run_listeners_notify
from posture.services import posture_evaluate

logger = logging.getLogger(__name__)


def debounce_seconds() -> int:
    return settings.GPUPOSTURE_RESCORE_DEBOUNCE_SECONDS


def rescore_dispatch(scope: RescoreScope) -> list[int]:
    """Mark the clusters `scope` touches pending and enqueue their re-score; returns the
    clusters newly marked (the others already wait for a re-score that will see the change)."""
    ids = clusters_touched(scope)
    marked = _mark_pending(ids, timezone.now())
    if marked:
        _enqueue(marked, reasons=scope.reasons)
    return marked


def clusters_touched(scope: RescoreScope) -> list[int]:
    """The clusters a change can move the findings of: named ones, those a tenant runs on or
    has findings on, those a provider hosts; every cluster for a global change."""
    if scope.everything:
        return list(Cluster.objects.order_by("pk").values_list("pk", flat=True))
    condition = Q(pk__in=scope.clusters)
    if scope.tenants:
        condition |= Q(pods__tenant__in=scope.tenants) | Q(findings__tenants__in=scope.tenants)
    if scope.providers:
        condition |= Q(provider__in=scope.providers)
    return list(
        Cluster.objects.filter(condition).order_by("pk").values_list("pk", flat=True).distinct()
    )


def _mark_pending(ids: Iterable[int], now: datetime) -> list[int]:
    """The clusters this call marked: not pending before, or pending so long that their task
    was lost (a queue that was down); one conditional UPDATE each (STYLE rule 4)."""
    ids = list(ids)
    existing = set(ClusterScoreState.objects.filter(pk__in=ids).values_list("pk", flat=True))
    ClusterScoreState.objects.bulk_create(
        [ClusterScoreState(cluster_id=pk) for pk in ids if pk not in existing],
        ignore_conflicts=True,  # a concurrent request created it: the UPDATE below decides
    )
    lost = now - timedelta(seconds=settings.GPUPOSTURE_RESCORE_LOST_AFTER_SECONDS)
    free = Q(pending_since__isnull=True) | Q(pending_since__lt=lost)
    return [
        pk
        for pk in ids
        if ClusterScoreState.objects.filter(free, pk=pk).update(pending_since=now) == 1
    ]


def _enqueue(cluster_ids: list[int], *, reasons: Iterable[str]) -> None:
    try:
        enqueue_rescore(cluster_ids=cluster_ids, countdown=debounce_seconds())
    except QueueUnavailable:
        # The markers stay: the sweep re-enqueues them once they count as lost.
        logger.warning("re-score of clusters %s (%s) waits for the sweep", cluster_ids, reasons)


def rescore_claim(cluster_ids: Iterable[int]) -> list[int]:
    """The clusters still pending, now claimed by this caller (a redelivered or duplicate task
    finds none: the first claim cleared the marker)."""
    return [
        pk
        for pk in cluster_ids
        if ClusterScoreState.objects.filter(pk=pk, pending_since__isnull=False).update(
            pending_since=None
        )
        == 1
    ]


def rescore_run(*, cluster_ids: Iterable[int]) -> PostureRun | None:
    """The task's work: claim the clusters still pending and score them (None: nothing left)."""
    claimed = rescore_claim(cluster_ids)
    if not claimed:
        return None
    every = set(Cluster.objects.values_list("pk", flat=True))
    try:
        if every <= set(claimed):
            return rescore_now(clusters=None)
        return rescore_now(clusters=list(Cluster.objects.filter(pk__in=claimed)))
    except Exception:
        # Marked again, so the sweep retries once the mark counts as lost; the error
        # reaches the task's failure metrics and log.
        unclaimed = ClusterScoreState.objects.filter(pk__in=claimed, pending_since__isnull=True)
        unclaimed.update(pending_since=timezone.now())
        raise


def rescore_now(*, clusters: list[Cluster] | None = None) -> PostureRun:
    """Evaluate and score now (one cluster set, or all): the one way every score is asked."""
    run = posture_evaluate(clusters=clusters)  # it stamps each cluster's last score
    if (
        clusters is not None
        and not ClusterScoreState.objects.filter(pending_since__isnull=False).exists()
    ):
        # Nothing else waits: bulletin imports learn what they resolved (a full run does
        # this itself).
        bulletin_imports_effects_record(run=run)
    run_listeners_notify(run)  # e.g. notifications' digests, once per run
    return run


def rescore_sweep(*, now: datetime | None = None) -> list[int]:
    """Beat's periodic pass: re-score the clusters whose scores time moved (an acceptance,
    a sharing approval or a questionnaire past its expiry since the last score) and those
    whose re-score was lost. Returns the clusters enqueued."""
    now = now or timezone.now()
    lost = now - timedelta(seconds=settings.GPUPOSTURE_RESCORE_LOST_AFTER_SECONDS)
    stuck = ClusterScoreState.objects.filter(pending_since__lt=lost).values_list("pk", flat=True)
    return _enqueue_expired(now, also=stuck)


def rescore_expired_when_eager() -> None:
    """Where no worker runs (Celery eager: the demo, one process) no beat sweeps for what time
    alone expired: a read of scores sweeps first (a few small queries; a re-score only where
    an acceptance, an approval or a questionnaire expired since the last score), so a score
    never counts an acceptance past its date as in force. On a worker, beat's sweep does it
    (GPUPOSTURE_RESCORE_SWEEP_SECONDS)."""
    if not settings.CELERY_TASK_ALWAYS_EAGER:
        return
    # No lost re-score to look for: an eager one runs, or fails, where it is asked.
    _enqueue_expired(timezone.now())


def _enqueue_expired(now: datetime, *, also: Iterable[int] = ()) -> list[int]:
    """Mark pending and enqueue the clusters an expiry at or before `now` touched since their
    last score (clusters_due), with `also` (read after them); returns the clusters enqueued."""
    ids = sorted(clusters_due(now=now) | set(also))
    if not ids:
        return []
    marked = _mark_pending(ids, now)
    if marked:
        _enqueue(marked, reasons={"expiry"})
    return marked


__all__ = [
    "rescore_request",
    "rescore_dispatch",
    "rescore_now",
    "rescore_run",
    "rescore_sweep",
    "rescore_expired_when_eager",
]
