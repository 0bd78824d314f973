"""Inventory reads for pages and the API."""

from __future__ import annotations

from datetime import datetime

from django.db.models import OuterRef, Prefetch, QuerySet, Subquery
from django.utils import timezone

from inventory.models import Cluster, Node, SyncRun
from inventory.patching import COMPONENTS


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


POOL_LABEL = "gpuposture.io/pool"
PATCH_COMPONENTS = tuple(COMPONENTS.values())


def patch_overview(user) -> dict:  # type: ignore[no-untyped-def]
    """Per cluster and node pool: nodes current / below / unknown, and what each node should
    move to, oldest exposure first."""
    nodes = (
        Node.objects.visible_to(user)
        .filter(is_gpu_node=True)
        .select_related("cluster")
        .order_by("cluster__name", "name")
    )
    now = timezone.now()
    rows: list[dict] = []
    pools: dict[str, dict] = {}
    for node in nodes:
        pool = f"{node.cluster.name} / {node.labels.get(POOL_LABEL, 'no pool label')}"
        counts = pools.setdefault(pool, _pool_counts())
        counts[node.patch_status] += 1
        for component in {e["component"] for e in node.patch_exposures}:
            if component in counts["components"]:
                counts["components"][component] += 1
        rows.append(_patch_row(node, pool, now))
    rows.sort(key=lambda r: (-(r["oldest_days"] or -1), r["node"].name))
    return {"rows": rows, "pools": pools}


def _pool_counts() -> dict:
    return {
        "current": 0,
        "below_baseline": 0,
        "unknown": 0,
        "components": dict.fromkeys(PATCH_COMPONENTS, 0),
    }


def _patch_row(node: Node, pool: str, now: datetime) -> dict:
    released = [datetime.fromisoformat(e["released"]) for e in node.patch_exposures]
    move_to = {
        f"{e['component']} {e['fixed_version']}"
        for e in node.patch_exposures
        if e.get("fixed_version")
    }
    return {
        "node": node,
        "pool": pool,
        "oldest_days": (now - min(released)).days if released else None,
        "move_to": sorted(move_to),
    }
