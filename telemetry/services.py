"""Telemetry writes: store DCGM samples attributed to tenants, roll them up by the hour and
drop raw samples past retention, read a cluster's configured source, record GPU resets."""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from datetime import time as dtime

from django.conf import settings
from django.db import transaction
from django.db.models import Case, IntegerField, Min, Sum, Value, When
from django.utils import timezone

from gpuposture.base.fetch import FetchError, fetch
from gpuposture.base.rescore import rescore_request
from inventory.models import Cluster
from telemetry.attribution import CONFIDENCES, Attributed, attribute, worst_confidence
from telemetry.dcgm import DcgmError, parse_exporter_text
from telemetry.ingest_context import attribution_context, kai_reservations, samples_as_read
from telemetry.models import (
    GpuReading,
    GpuUsageDaily,
    GpuUsageHourly,
    ResetAttestation,
    TelemetrySource,
)
from telemetry.prometheus_api import PrometheusError, parse_matchers, query_range_samples
from telemetry.samples import GpuSample
from telemetry.usage import MAX_GAP, mig_slices, weighted
from tenants.mapping import UNCLASSIFIED
from tenants.models import Tenant
from tenants.services import unclassified_tenant_ensure

logger = logging.getLogger(__name__)


class TelemetryError(Exception):
    """Telemetry could not be read; the message says where and why."""


@dataclass
class IngestResult:
    samples: int = 0
    by_attribution: dict[str, int] = field(default_factory=dict)
    first: datetime | None = None
    last: datetime | None = None
    hours_rolled: int = 0  # hours rolled up at once, the one under way too (ingested_hours_rollup)


def samples_ingest(*, cluster: Cluster, samples: list[GpuSample]) -> IngestResult:
    """Attribute and store samples; one already stored (same series and time) is skipped."""
    samples = samples_as_read(cluster, samples)
    owners, shared, platform = attribution_context(cluster)
    reservations = kai_reservations(cluster, samples, owners, platform)
    attributed = attribute(
        samples, owners=owners, shared_nodes=shared, platform=platform, reservations=reservations
    )
    if any(a.tenant == UNCLASSIFIED for a in attributed):
        unclassified_tenant_ensure()  # the party the usage is booked to must exist
    tenant_ids = dict(Tenant.objects.values_list("slug", "pk"))
    GpuReading.objects.bulk_create(
        (_reading(cluster, a, tenant_ids) for a in attributed),
        batch_size=2000,
        ignore_conflicts=True,
    )
    result = IngestResult(samples=len(attributed))
    for a in attributed:
        # Said apart from the tenants' own: usage nobody claims is what a reader acts on.
        kind = UNCLASSIFIED if a.tenant == UNCLASSIFIED else a.attribution
        result.by_attribution[kind] = result.by_attribution.get(kind, 0) + 1
    if samples:
        result.first = min(s.time for s in samples)
        result.last = max(s.time for s in samples)
    return result


def _reading(cluster: Cluster, a: Attributed, tenant_ids: dict[str, int]) -> GpuReading:
    s = a.sample
    return GpuReading(
        cluster=cluster,
        time=s.time,
        hostname=s.hostname[:253],
        gpu=s.gpu[:16],
        uuid=s.uuid[:80],
        model=s.model[:120],
        gi_id=s.gi_id[:8],
        gi_profile=s.gi_profile[:40],
        util=s.util,
        gr_active=s.gr_active,
        fb_used_mib=s.fb_used_mib,
        namespace=s.namespace[:63],
        pod=s.pod[:253],
        container=s.container[:253],
        tenant_id=tenant_ids.get(a.tenant or ""),
        attribution=a.attribution,
        confidence=a.confidence,
    )


def exporter_text_ingest(
    *, cluster: Cluster, text: str, read_at: datetime, under_way: bool = True
) -> IngestResult:
    try:
        samples = parse_exporter_text(text, scraped_at=read_at)
    except DcgmError as exc:
        raise TelemetryError(f"not DCGM-Exporter text: {exc}") from exc
    return _ingest_and_roll(cluster, samples, under_way=under_way)


def prometheus_ingest(
    *,
    cluster: Cluster,
    url: str,
    since: timedelta,
    now: datetime | None = None,
    match: Mapping[str, str] | None = None,
    under_way: bool = True,
) -> IngestResult:
    """`match`: the labels that pick this cluster's series where one Prometheus holds several
    clusters' (without it, every series is taken as this cluster's). `under_way`: roll up the
    hour under way too (ingested_hours_rollup)."""
    end = now or timezone.now()
    try:
        samples = query_range_samples(url, start=end - since, end=end, match=match)
    except PrometheusError as exc:
        raise TelemetryError(str(exc)) from exc
    return _ingest_and_roll(cluster, samples, under_way=under_way)


def _ingest_and_roll(
    cluster: Cluster, samples: list[GpuSample], *, under_way: bool
) -> IngestResult:
    """Store samples, then roll up the hours they touched: the utilisation page and API read
    roll-ups, and a user who ingests and looks should not wait for beat's next one."""
    result = samples_ingest(cluster=cluster, samples=samples)
    if result.first is not None and result.last is not None:
        result.hours_rolled = ingested_hours_rollup(
            cluster=cluster, first=result.first, last=result.last, under_way=under_way
        )
    return result


def telemetry_source_read(*, source: TelemetrySource) -> IngestResult:
    """Read a cluster's configured source once (the beat task); a failure is recorded on the
    source and raised, and what was stored before stays."""
    now = timezone.now()
    try:
        if source.kind == TelemetrySource.Kind.PROMETHEUS:
            window = timedelta(minutes=max(source.interval_minutes, 1) * 2)  # overlap: no holes
            result = prometheus_ingest(
                cluster=source.cluster,
                url=source.url,
                since=window,
                match=parse_matchers(source.match),
                under_way=False,
            )
        else:
            try:
                text = fetch(source.url, accept="text/plain").decode("utf-8", "replace")
            except FetchError as exc:
                raise TelemetryError(str(exc)) from exc
            # The hour under way is beat's roll-up's (every 15 min): re-rolling it on every read
            # (each minute) would cost up to a whole hour's roll-up a minute on a large fleet.
            result = exporter_text_ingest(
                cluster=source.cluster, text=text, read_at=now, under_way=False
            )
    except TelemetryError as exc:
        TelemetrySource.objects.filter(pk=source.pk).update(last_error=str(exc)[:2000])
        raise
    TelemetrySource.objects.filter(pk=source.pk).update(last_read_at=now, last_error="")
    return result


def telemetry_sources_read_due(*, now: datetime | None = None) -> tuple[int, int]:
    """Read every source whose interval has passed since its last read (beat, every minute);
    returns (read, failed). A failure is recorded on its source; the others still run."""
    now = now or timezone.now()
    read, failed = 0, 0
    for source in TelemetrySource.objects.select_related("cluster"):
        due = source.last_read_at is None or (
            (now - source.last_read_at).total_seconds() >= source.interval_minutes * 60
        )
        if not due:
            continue
        try:
            telemetry_source_read(source=source)
            read += 1
        except TelemetryError as exc:
            logger.warning("telemetry of %s: %s", source.cluster.name, exc)
            failed += 1
    return read, failed


# --- roll-up -----------------------------------------------------------------------------------


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


# --- reset attestations ------------------------------------------------------------------------


def reset_attestation_record(*, attestation: ResetAttestation, actor: str) -> ResetAttestation:
    attestation.recorded_by = actor[:150]
    attestation.full_clean()
    attestation.save()
    rescore_request(clusters=[attestation.cluster_id], reason="reset attestation")
    return attestation
