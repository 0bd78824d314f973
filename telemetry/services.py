"""Telemetry writes: store DCGM samples attributed to tenants (and roll up the hours they touch,
telemetry.rollup), read a cluster's configured source, record GPU resets."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.utils import timezone

from gpuposture.base.fetch import FetchError, fetch, shown_url
from gpuposture.base.rescore import rescore_request
from inventory.models import Cluster
from telemetry.attribution import Attributed, attribute
from telemetry.dcgm import DcgmError, Skipped, parse_exporter_text
from telemetry.ingest_changes import readings_move_checks
from telemetry.ingest_context import (
    attribution_context,
    kai_reservations,
    label_checks,
    samples_as_read,
)
from telemetry.models import GpuReading, ResetAttestation, TelemetrySource
from telemetry.prometheus_api import PrometheusError, parse_matchers, query_range_samples
from telemetry.rollup import ingested_hours_rollup
from telemetry.samples import GpuSample
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
    # Whether the samples can move a check reading telemetry (telemetry.ingest_changes).
    moves_checks: bool = False
    # Values read but left out of their samples: no GPU reports them (telemetry.dcgm).
    skipped: Skipped = field(default_factory=Skipped)


def samples_ingest(*, cluster: Cluster, samples: list[GpuSample]) -> IngestResult:
    """Attribute and store samples; one already stored (same series and time) is skipped."""
    samples = samples_as_read(cluster, samples)
    owners, shared, platform = attribution_context(cluster)
    reservations = kai_reservations(cluster, samples, owners, platform)
    elsewhere, unlisted = label_checks(cluster, samples)
    attributed = attribute(
        samples,
        owners=owners,
        shared_nodes=shared,
        platform=platform,
        reservations=reservations,
        elsewhere=elsewhere,
        unlisted=unlisted,
    )
    if any(a.tenant == UNCLASSIFIED for a in attributed):
        unclassified_tenant_ensure()  # the party the usage is booked to must exist
    tenant_ids = dict(Tenant.objects.values_list("slug", "pk"))
    readings = [_reading(cluster, a, tenant_ids) for a in attributed]
    moves_checks = readings_move_checks(cluster, readings)  # before they are stored
    GpuReading.objects.bulk_create(readings, batch_size=2000, ignore_conflicts=True)
    result = IngestResult(samples=len(attributed), moves_checks=moves_checks)
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
    if "\x00" in text:
        # Label values are stored as names (host, namespace, pod) and PostgreSQL stores no
        # NUL: refused here with its line rather than by the database half-way through.
        line = text.count("\n", 0, text.index("\x00")) + 1
        raise TelemetryError(
            f"not DCGM-Exporter text: line {line} holds a NUL byte, which Prometheus text "
            "never does"
        )
    skipped = Skipped()
    try:
        samples = parse_exporter_text(text, scraped_at=read_at, skipped=skipped)
    except DcgmError as exc:
        raise TelemetryError(f"not DCGM-Exporter text: {exc}") from exc
    return _ingest_and_roll(cluster, samples, skipped, under_way=under_way)


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
    skipped = Skipped()
    try:
        samples = query_range_samples(url, start=end - since, end=end, match=match, skipped=skipped)
    except PrometheusError as exc:
        raise TelemetryError(str(exc)) from exc
    return _ingest_and_roll(cluster, samples, skipped, under_way=under_way)


def _ingest_and_roll(
    cluster: Cluster, samples: list[GpuSample], skipped: Skipped, *, under_way: bool
) -> IngestResult:
    """Store samples, then roll up the hours they touched: the utilisation page and API read
    roll-ups, and a user who ingests and looks should not wait for beat's next one. Where the
    samples can move a check (ATTR-001/002/003, LEAK-001), re-score the cluster as a sync
    does: a node whose first samples arrive no longer reads silent until someone scores.
    Only then: beat reads each source every few minutes, and idle readings of the devices
    already reporting, by the same holders, move nothing (telemetry.ingest_changes)."""
    result = samples_ingest(cluster=cluster, samples=samples)
    result.skipped = skipped
    if result.first is not None and result.last is not None:
        result.hours_rolled = ingested_hours_rollup(
            cluster=cluster, first=result.first, last=result.last, under_way=under_way
        )
    if result.moves_checks:
        rescore_request(clusters=[cluster.pk], reason="telemetry ingest")
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
        # The messages name the URL cleaned (fetch.shown_url); the URL as stored is replaced
        # too, should one quote it whole: the source's page shows this to its readers.
        error = str(exc).replace(source.url, shown_url(source.url)) if source.url else str(exc)
        TelemetrySource.objects.filter(pk=source.pk).update(last_error=error[:2000])
        raise
    TelemetrySource.objects.filter(pk=source.pk).update(last_read_at=now, last_error="")
    if result.skipped.total:
        # The command says it to its user; beat's read has no one to tell but the log.
        logger.warning(
            "telemetry of %s: skipped %s", source.cluster.name, result.skipped.describe()
        )
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


# --- reset attestations ------------------------------------------------------------------------


def reset_attestation_record(*, attestation: ResetAttestation, actor: str) -> ResetAttestation:
    attestation.recorded_by = actor[:150]
    attestation.full_clean()
    attestation.save()
    rescore_request(clusters=[attestation.cluster_id], reason="reset attestation")
    return attestation
