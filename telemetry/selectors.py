"""Utilisation reads for the page and the API, from the daily roll-ups: a handful of grouped
queries over a month's days whatever the fleet's size. What a user sees is narrowed by
visible_to (a tenant viewer sees their tenants' hours, never the platform's or anyone else's)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from django.conf import settings
from django.db.models import F, FloatField, QuerySet, Sum
from django.db.models.functions import Cast
from django.utils import timezone

from inventory.models import Cluster
from telemetry.attribution import worst_confidence
from telemetry.models import GpuReading, GpuUsageDaily, GpuUsageHourly
from tenants.models import Tenant

# Shown to one decimal: a GPU under 0.05 busy GPU-hours would read "0.0" among the busiest.
BUSIEST_MIN_HOURS = 0.05


@dataclass(frozen=True)
class Period:
    days: int
    cluster: str | None = None

    @property
    def since(self) -> date:
        return timezone.now().date() - timedelta(days=self.days - 1)


def under_way() -> datetime:
    """The start (UTC) of the hour under way: its roll-up holds the samples ingested so far
    and is redone as more arrive (telemetry.rollup), so its day's figures are partial."""
    return timezone.now().astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def cluster_sampled(*, cluster: Cluster) -> bool:
    """Whether any DCGM-Exporter sample was ever ingested for the cluster (raw, or rolled up by
    the hour past the raw retention). None: every GPU node of it is without telemetry (ATTR-003)
    and its hijack detection (ATTR-001) is blind."""
    return (
        GpuReading.objects.filter(cluster=cluster).exists()
        or GpuUsageHourly.objects.filter(cluster=cluster).exists()
    )


def daily(user, period: Period) -> QuerySet[GpuUsageDaily]:
    rows = GpuUsageDaily.objects.visible_to(user).filter(day__gte=period.since)
    if period.cluster:
        rows = rows.filter(cluster__name=period.cluster)
    return rows


def _who(tenant_slug: str | None, attribution: str) -> str:
    return tenant_slug or attribution  # "platform" or "unattributed" when no tenant


def tenant_days(user, period: Period) -> list[dict]:
    """GPU-hours, MIG-slice-hours and busy GPU-hours per tenant per day, with the worst
    confidence of what went into each figure; `partial` for the day under way (UTC)."""
    grouped = (
        daily(user, period)
        .values("day", "tenant_id", "attribution", "confidence")
        .annotate(gpu=Sum("gpu_hours"), mig=Sum("mig_slice_hours"), busy=Sum("busy_gpu_hours"))
        .order_by()
    )
    tenants = _tenant_names()
    today = under_way().date()
    merged: dict[tuple, dict] = {}
    for row in grouped:
        slug, name = tenants.get(row["tenant_id"], (None, None))
        key = (row["day"], _who(slug, row["attribution"]))
        out = merged.setdefault(
            key,
            {
                "day": key[0],
                "tenant": key[1],
                # Pages show the name (the API keeps the slug in `tenant`).
                "tenant_name": name or key[1],
                "gpu_hours": 0.0,
                "mig_slice_hours": 0.0,
                "busy_gpu_hours": 0.0,
                "confidences": [],
            },
        )
        out["gpu_hours"] += row["gpu"] or 0.0
        out["mig_slice_hours"] += row["mig"] or 0.0
        out["busy_gpu_hours"] += row["busy"] or 0.0
        out["confidences"].append(row["confidence"])
    result = []
    for key in sorted(merged):
        out = merged[key]
        out["confidence"] = worst_confidence(out.pop("confidences"))
        out["partial"] = out["day"] >= today
        result.append(_mig_busy_unknown(_rounded(out)))
    return result


def _mig_busy_unknown(row: dict) -> dict:
    """Busy GPU-hours count whole GPUs only: DCGM-Exporter gives no DCGM_FI_DEV_GPU_UTIL for a
    MIG instance. A row of MIG time alone has no busy figure (None), not a busy figure of 0."""
    if not row["gpu_hours"] and row["mig_slice_hours"]:
        row["busy_gpu_hours"] = None
    return row


HOURS_FIELDS = ("gpu_hours", "mig_slice_hours", "busy_gpu_hours", "hours")


def _rounded(row: dict) -> dict:
    """Hours to 4 decimals (a third of a second): sums of floats otherwise print as
    71.55000000000001."""
    for field in HOURS_FIELDS:
        if field in row:
            row[field] = round(row[field], 4)
    return row


def chargeback(days: list[dict]) -> list[dict]:
    """Totals per tenant over the period (from tenant_days, so no further query)."""
    totals: dict[str, dict] = {}
    for row in days:
        t = totals.setdefault(
            row["tenant"],
            {
                "tenant": row["tenant"],
                "tenant_name": row["tenant_name"],
                "gpu_hours": 0.0,
                "mig_slice_hours": 0.0,
                "busy_gpu_hours": 0.0,
                "confidences": [],
            },
        )
        for field in ("gpu_hours", "mig_slice_hours", "busy_gpu_hours"):
            t[field] += row[field] or 0.0  # None: a MIG-only day, no busy figure
        t["confidences"].append(row["confidence"])
    for t in totals.values():
        t["confidence"] = worst_confidence(t.pop("confidences"))
        # What the chart stacks per tenant: whole-GPU hours plus MIG slice-hours.
        t["hours"] = t["gpu_hours"] + t["mig_slice_hours"]
        _mig_busy_unknown(_rounded(t))
    return sorted(totals.values(), key=lambda t: (-t["hours"], t["tenant"]))


def top_gpus(user, period: Period, n: int = 10) -> list[dict]:
    """The GPUs (or MIG instances) with the most busy GPU-hours; one never busy is not among
    the busiest, however long it was held (the idle list shows those)."""
    rows = (
        daily(user, period)
        .values("cluster_id", "hostname", "uuid", "gi_id", "gi_profile", "model")
        .annotate(
            hours=Sum(F("gpu_hours") + F("mig_slice_hours")),
            busy=Sum("busy_gpu_hours"),
        )
        .filter(busy__gte=BUSIEST_MIN_HOURS)
        .order_by("-busy", "-hours", "hostname", "uuid", "gi_id")[:n]
    )
    names = _cluster_names()
    return [r | {"cluster__name": names.get(r["cluster_id"], "")} for r in rows]


# Grouping by the ids, not by names joined in: the planner then sees few groups and hashes
# them (PostgreSQL sorted ~190k joined rows to disk); the names come from two small lists.
def _tenant_names() -> dict[int, tuple[str, str]]:
    return {pk: (slug, name) for pk, slug, name in Tenant.objects.values_list("pk", "slug", "name")}


def _cluster_names() -> dict[int, str]:
    return dict(Cluster.objects.values_list("pk", "name"))


def idle_allocated(user, period: Period, limit: int = 50) -> list[dict]:
    """Whole GPUs held by a tenant for at least an hour of a day, busy under the idle
    threshold (GPUPOSTURE_IDLE_THRESHOLD_PERCENT) on average that day."""
    threshold = settings.GPUPOSTURE_IDLE_THRESHOLD_PERCENT / 100.0
    rows = (
        daily(user, period)
        .filter(attribution="tenant", gi_id="")
        .values("day", "cluster_id", "hostname", "uuid", "tenant_id")
        .annotate(hours=Sum("gpu_hours"), busy=Sum("busy_gpu_hours"))
        .filter(hours__gte=1.0, busy__lt=Cast(F("hours"), FloatField()) * threshold)
        .order_by("-day", "-hours", "hostname", "uuid")[:limit]
    )
    rows = list(rows)
    if not rows:
        return []
    names, tenants = _cluster_names(), _tenant_names()
    return [
        r
        | {
            "cluster__name": names.get(r["cluster_id"], ""),
            "tenant__slug": tenants.get(r["tenant_id"], ("", ""))[0],
            "tenant__name": tenants.get(r["tenant_id"], ("", ""))[1],
            "mean_busy": 100.0 * (r["busy"] or 0.0) / r["hours"],
        }
        for r in rows
    ]
