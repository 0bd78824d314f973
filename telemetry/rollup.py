"""Telemetry roll-ups: each hour of raw DCGM samples aggregated into GpuUsageHourly (and its
day into GpuUsageDaily), which the utilisation page and API read; raw samples past the
retention dropped. Moved out of telemetry.services, which stores the samples."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from datetime import time as dtime

from django.conf import settings
from django.db import transaction
from django.db.models import Case, IntegerField, Min, Sum, Value, When
from django.utils import timezone

from inventory.models import Cluster
from telemetry.attribution import CONFIDENCES, Attributed, worst_confidence
from telemetry.models import GpuReading, GpuUsageDaily, GpuUsageHourly
from telemetry.samples import GpuSample
from telemetry.usage import MAX_GAP, mig_slices, weighted
from tenants.models import Tenant


@dataclass
class RollupResult:
    hours: int = 0
    rows: int = 0
    deleted: int = 0


def telemetry_rollup(*, now: datetime | None = None) -> RollupResult:
    """Aggregate each hour of raw samples into GpuUsageHourly, the hour under way too (partial:
    the samples so far), replacing that hour's rows, so running again, or after late samples,
    is harmless; then delete raw samples older than the retention
    (GPUPOSTURE_TELEMETRY_RETENTION_DAYS)."""
    now = now or timezone.now()
    result = RollupResult()
    for cluster in Cluster.objects.all():
        hours = _hours_to_roll(cluster, _hour_of(now) + timedelta(hours=1))
        result.rows += _roll(cluster, hours)
        result.hours += len(hours)
    cutoff = now - timedelta(days=settings.GPUPOSTURE_TELEMETRY_RETENTION_DAYS)
    result.deleted, _ = GpuReading.objects.filter(time__lt=cutoff).delete()
    return result


def ingested_hours_rollup(
    *,
    cluster: Cluster,
    first: datetime,
    last: datetime,
    now: datetime | None = None,
    under_way: bool = True,
) -> int:
    """Roll up the hours (and their days) that samples from `first` to `last` touch, and return
    how many: from the hour MAX_GAP before `first` (a new sample ends the span of the one before
    it) to the hour of `last`, never an hour older than the raw retention (its other samples
    may be gone). The hour under way is rolled from the samples so far (`under_way`; the
    utilisation page marks it partial): rolling replaces an hour's rows, and beat's roll-up
    rolls the last rolled hour again, so it is completed once it ends."""
    now = now or timezone.now()
    until = _hour_of(now) + (timedelta(hours=1) if under_way else timedelta(0))
    retained = now - timedelta(days=settings.GPUPOSTURE_TELEMETRY_RETENTION_DAYS)
    start = max(_hour_of(first - MAX_GAP), _hour_of(retained) + timedelta(hours=1))
    end = min(_hour_of(last) + timedelta(hours=1), until)
    readings = GpuReading.objects.filter(cluster=cluster, time__gte=start, time__lt=end)
    hours = list(readings.datetimes("time", "hour", tzinfo=UTC)) if start < end else []
    _roll(cluster, hours)
    return len(hours)


def _hour_of(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def _roll(cluster: Cluster, hours: list[datetime]) -> int:
    """Roll each hour, then each day they fall in; the number of hourly rows written."""
    rows = sum(_roll_hour(cluster, hour) for hour in hours)
    for day in sorted({hour.date() for hour in hours}):
        _roll_day(cluster, day)
    return rows


def _hours_to_roll(cluster: Cluster, before: datetime) -> list[datetime]:
    readings = GpuReading.objects.filter(cluster=cluster, time__lt=before)
    last_rolled = (
        GpuUsageHourly.objects.filter(cluster=cluster)
        .order_by("-hour")
        .values_list("hour", flat=True)
        .first()
    )
    if last_rolled is not None:
        readings = readings.filter(time__gte=last_rolled)  # the last hour again: late samples
    # Only hours with samples (one grouped query): a quiet night costs nothing.
    return list(readings.datetimes("time", "hour", tzinfo=UTC))


# GpuReading columns that are GpuSample fields of the same name, in the order rows carry them.
SAMPLE_COLUMNS = (
    "time",
    "hostname",
    "gpu",
    "uuid",
    "model",
    "gi_id",
    "gi_profile",
    "util",
    "gr_active",
    "namespace",
    "pod",
)


@transaction.atomic
def _roll_hour(cluster: Cluster, hour: datetime) -> int:
    end = hour + timedelta(hours=1)
    # The samples just after the hour too: each sample lasts until its series' next one.
    rows = GpuReading.objects.filter(cluster=cluster, time__gte=hour, time__lt=end + MAX_GAP)
    slugs = dict(Tenant.objects.values_list("pk", "slug"))
    # Plain tuples, not model instances: an hour of a large fleet is hundreds of thousands.
    columns = (*SAMPLE_COLUMNS, "tenant_id", "attribution", "confidence")
    attributed = [
        Attributed(
            GpuSample(**dict(zip(SAMPLE_COLUMNS, sample, strict=True))),
            slugs.get(tenant_id or 0),
            attribution,
            confidence,
        )
        for *sample, tenant_id, attribution, confidence in rows.values_list(*columns).iterator(
            chunk_size=10000
        )
    ]
    totals: dict[tuple, dict] = defaultdict(
        lambda: {"gpu": 0.0, "mig": 0.0, "busy": 0.0, "n": 0, "max": None, "conf": []}
    )
    for a, hours in weighted(attributed):
        s = a.sample
        if s.time >= end:
            continue
        key = (s.hostname, s.uuid or s.gpu, s.gi_id, s.gi_profile, s.model, a.tenant, a.attribution)
        t = totals[key]
        if s.gi_id:
            t["mig"] += hours * mig_slices(s.gi_profile)
        else:
            t["gpu"] += hours
        busy = s.busy
        if not s.gi_id:  # busy GPU-hours are whole GPUs' (as telemetry.usage counts them)
            t["busy"] += hours * (busy or 0.0) / 100.0
        t["n"] += 1
        t["max"] = busy if t["max"] is None else max(t["max"], busy or 0.0)
        t["conf"].append(a.confidence)
    GpuUsageHourly.objects.filter(cluster=cluster, hour=hour).delete()
    tenant_ids = {slug: pk for pk, slug in slugs.items()}
    GpuUsageHourly.objects.bulk_create(
        GpuUsageHourly(
            cluster=cluster,
            hour=hour,
            hostname=host[:253],
            uuid=uuid[:80],
            gi_id=gi_id,
            gi_profile=profile,
            model=model[:120],
            tenant_id=tenant_ids.get(tenant or ""),
            attribution=attribution,
            confidence=worst_confidence(t["conf"]),
            gpu_hours=t["gpu"],
            mig_slice_hours=t["mig"],
            busy_gpu_hours=t["busy"],
            samples=t["n"],
            busy_max=t["max"],
        )
        for (host, uuid, gi_id, profile, model, tenant, attribution), t in totals.items()
    )
    return len(totals)


DAY_KEYS = ("hostname", "uuid", "gi_id", "gi_profile", "model", "tenant_id", "attribution")
# A figure is as sure as its least sure part: rank confidences worst first, keep the minimum.
CONFIDENCE_RANK = Case(
    *(When(confidence=c, then=Value(rank)) for rank, c in enumerate(CONFIDENCES)),
    output_field=IntegerField(),
)


@transaction.atomic
def _roll_day(cluster: Cluster, day: date) -> None:
    """A day's rows, from its hours (one grouped query), replacing what was there."""
    start = datetime.combine(day, dtime.min, tzinfo=UTC)
    grouped = (
        GpuUsageHourly.objects.filter(
            cluster=cluster, hour__gte=start, hour__lt=start + timedelta(days=1)
        )
        .values(*DAY_KEYS)
        .annotate(
            gpu=Sum("gpu_hours"),
            mig=Sum("mig_slice_hours"),
            busy=Sum("busy_gpu_hours"),
            n=Sum("samples"),
            worst=Min(CONFIDENCE_RANK),
        )
        .order_by()
    )
    GpuUsageDaily.objects.filter(cluster=cluster, day=day).delete()
    GpuUsageDaily.objects.bulk_create(
        GpuUsageDaily(
            cluster=cluster,
            day=day,
            **{k: row[k] for k in DAY_KEYS},
            confidence=CONFIDENCES[row["worst"]],
            gpu_hours=row["gpu"] or 0.0,
            mig_slice_hours=row["mig"] or 0.0,
            busy_gpu_hours=row["busy"] or 0.0,
            samples=row["n"] or 0,
        )
        for row in grouped
    )
