"""Inventory reads for pages and the API."""

from __future__ import annotations

from django.db.models import OuterRef, Prefetch, QuerySet, Subquery

from inventory.models import Cluster, SyncRun


def latest_sync_runs() -> QuerySet[SyncRun]:
    newest = SyncRun.objects.filter(cluster=OuterRef("cluster")).order_by("-started_at", "-id")
    return SyncRun.objects.filter(pk=Subquery(newest.values("pk")[:1]))


def clusters_with_last_sync(user) -> list[Cluster]:  # type: ignore[no-untyped-def]
    """Clusters the user may see, each with `.last_run` (its newest SyncRun or None)."""
    clusters = (
        Cluster.objects.visible_to(user)
        .select_related("provider")
        .prefetch_related(Prefetch("sync_runs", queryset=latest_sync_runs(), to_attr="last_runs"))
    )
    result = list(clusters)
    for cluster in result:
        cluster.last_run = cluster.last_runs[0] if cluster.last_runs else None
    return result
