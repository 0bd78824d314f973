"""How current what a page shows is: per cluster, whether its inventory is stale (and why),
whether a re-score is pending, and when it was last scored. One query for any number of
clusters; a tenant viewer's copy of a sync error hides other tenants' names.

A tenant's clusters are those its score rests on: where it runs pods, and where a finding that
affects it (open or accepted) was raised, pods or not (an RBAC binding granting its group on
a cluster it runs nothing on)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import OuterRef, Q, QuerySet, Subquery
from django.utils import timezone

from gpuposture.base.enums import FindingStatus
from inventory.freshness import Freshness, age_words, cluster_freshness
from inventory.models import Cluster, SyncRun, source_is_stored
from inventory.presenter import hidden_scope_for
from posture.models import Finding, TenantScore
from tenants.models import Tenant

COUNTED = (FindingStatus.OPEN, FindingStatus.ACCEPTED)  # the findings a tenant's page lists


@dataclass(frozen=True)
class ClusterCurrency:
    name: str
    freshness: Freshness
    pending: bool  # a re-score is waiting (posture.rescore)
    last_scored_at: datetime | None

    @property
    def age(self) -> str:
        """Since the last good sync, in words ("" when never)."""
        seconds = self.freshness.age_seconds
        return age_words(seconds) if seconds is not None else ""


@dataclass(frozen=True)
class Currency:
    """What a page says about the clusters it shows."""

    clusters: list[ClusterCurrency]
    # When the tenant was last scored, for a page whose tenant is on no cluster (nothing of it
    # was read anywhere): its score card still shows that run's score.
    scored_at: datetime | None = None

    @property
    def stale(self) -> list[ClusterCurrency]:
        return [c for c in self.clusters if c.freshness.stale]

    @property
    def pending(self) -> list[str]:
        return [c.name for c in self.clusters if c.pending]

    @property
    def last_scored_at(self) -> datetime | None:
        times = [c.last_scored_at for c in self.clusters if c.last_scored_at]
        return max(times, default=self.scored_at)


def clusters_currency(
    user: Any, *, tenant: Tenant | None = None, cluster: Cluster | None = None
) -> Currency:
    """The clusters `user` may see (`tenant`'s clusters, or `cluster` alone)."""
    clusters: QuerySet[Cluster] = Cluster.objects.visible_to(user)
    if tenant is not None:
        clusters = _tenant_clusters(user, tenant)
    if cluster is not None:
        clusters = clusters.filter(pk=cluster.pk)
    now = timezone.now()
    rows = [_currency(row, now) for row in _rows(clusters)]
    if any(c.freshness.failed for c in rows):
        rows = _redacted(user, rows)
    if tenant is not None and not rows:
        return Currency(rows, scored_at=_tenant_scored_at(tenant))
    return Currency(rows)


def clusters_currency_all() -> Currency:
    """Every cluster, as stored (for /metrics: the operator's token sees everything)."""
    now = timezone.now()
    return Currency([_currency(row, now) for row in _rows(Cluster.objects.all())])


def _tenant_clusters(user: Any, tenant: Tenant) -> QuerySet[Cluster]:
    """Where `tenant` runs pods, or where a finding it counts was raised. The user sees the
    tenant (the page's own lookup), hence its findings and the clusters they name."""
    runs = Cluster.objects.visible_to(user).filter(pods__tenant=tenant)
    counted = Finding.objects.visible_to(user).affecting(tenant=tenant).filter(status__in=COUNTED)
    return Cluster.objects.filter(
        Q(pk__in=runs.values("pk")) | Q(pk__in=counted.values("cluster_id"))
    )


def _tenant_scored_at(tenant: Tenant) -> datetime | None:
    """When the run that stored the tenant's latest score finished (one query, only for a
    tenant on no cluster)."""
    latest = TenantScore.objects.filter(tenant=tenant).order_by("-computed_at", "-id")
    return latest.values_list("run__finished_at", flat=True).first()


def _rows(clusters: QuerySet[Cluster]) -> QuerySet:
    finished = SyncRun.objects.filter(cluster=OuterRef("pk"), finished_at__isnull=False).order_by(
        "-finished_at", "-id"
    )
    good = finished.filter(status=SyncRun.Status.SUCCEEDED)
    return (
        clusters.annotate(
            last_good_at=Subquery(good.values("finished_at")[:1]),
            last_status=Subquery(finished.values("status")[:1]),
            last_error=Subquery(finished.values("error")[:1]),
        )
        .order_by("name")
        .values(
            "name",
            "source",
            "snapshot_paths",
            "sync_interval_minutes",
            "created_at",
            "last_good_at",
            "last_status",
            "last_error",
            "score_state__pending_since",
            "score_state__last_scored_at",
        )
    )


def _currency(row: dict[str, Any], now: datetime) -> ClusterCurrency:
    # As inventory.schedule decides: a snapshot cluster with no stored file is never re-read.
    scheduled = source_is_stored(row["source"], row["snapshot_paths"])
    freshness = cluster_freshness(
        now=now,
        interval_minutes=row["sync_interval_minutes"] if scheduled else 0,
        last_good_at=row["last_good_at"],
        last_status=row["last_status"],
        last_error=row["last_error"] or "",
        registered_at=row["created_at"],
    )
    return ClusterCurrency(
        name=row["name"],
        freshness=freshness,
        pending=row["score_state__pending_since"] is not None,
        last_scored_at=row["score_state__last_scored_at"],
    )


def _redacted(user: Any, rows: list[ClusterCurrency]) -> list[ClusterCurrency]:
    """A sync error names objects of every namespace: a tenant viewer sees others' hidden."""
    scope = hidden_scope_for(user)
    if scope is None or scope.empty:
        return rows
    return [
        ClusterCurrency(
            c.name,
            Freshness(
                c.freshness.stale,
                c.freshness.failed,
                c.freshness.age_seconds,
                scope.in_cluster(c.name).text(c.freshness.reason),
            ),
            c.pending,
            c.last_scored_at,
        )
        for c in rows
    ]
