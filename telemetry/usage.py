"""GPU-hours from attributed DCGM-Exporter samples: per tenant and day, chargeback, the busiest
GPUs and GPUs a tenant holds but leaves idle. PURE.

A sample stands for the time until its series' next sample. A series is one device (GPU or MIG
instance) as seen by one (namespace, pod): the exporter emits one per pod mapped to the device."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

from telemetry.attribution import Attributed, worst_confidence

DEFAULT_INTERVAL = timedelta(seconds=30)  # DCGM-Exporter's usual scrape interval
MAX_GAP = timedelta(minutes=5)  # a longer silence is missing data, not usage

Device = tuple[str, str, str]  # GpuSample.device: (hostname, uuid or index, gi_id)


@dataclass(frozen=True)
class UsageRow:
    day: date
    tenant: str  # the slug, or "platform" / "unattributed"
    gpu_hours: float  # whole GPUs only
    mig_slice_hours: float  # MIG instances, hours x compute slices of the profile
    # Whole GPUs only: hours x busy/100. None for MIG time alone: DCGM-Exporter gives no
    # DCGM_FI_DEV_GPU_UTIL for a MIG instance, so its busy time is unknown, not zero.
    busy_gpu_hours: float | None
    confidence: str  # the worst among the row's samples


@dataclass(frozen=True)
class ChargebackRow:
    tenant: str
    gpu_hours: float
    mig_slice_hours: float
    busy_gpu_hours: float | None  # None as in UsageRow
    days: int  # distinct days with usage among the rows given


@dataclass(frozen=True)
class GpuUse:
    device: Device
    model: str
    hours: float
    mean_busy: float | None  # time-weighted percent; None when no sample had a busy value
    tenants: tuple[str, ...]  # sorted tenant keys seen on the device


@dataclass(frozen=True)
class IdleGpu:
    day: date
    device: Device
    tenant: str
    hours: float
    mean_busy: float


def weighted(
    attributed: Iterable[Attributed],
    *,
    default_interval: timedelta = DEFAULT_INTERVAL,
    max_gap: timedelta = MAX_GAP,
) -> list[tuple[Attributed, float]]:
    """Each sample with the hours it stands for, ordered by device, time, namespace, pod."""
    items = sorted(attributed, key=_order)
    span = [default_interval] * len(items)  # a series' last sample keeps the default
    previous: dict[tuple, int] = {}  # series -> index of its latest sample so far
    for i, a in enumerate(items):
        j = previous.get(_series(a))
        if j is not None:
            span[j] = min(a.sample.time - items[j].sample.time, max_gap)
        previous[_series(a)] = i
    # k series at one device and time are one GPU's time, not k GPUs': on a shared node the
    # exporter copies the GPU-wide value onto each pod. Splitting whenever k > 1 (not only on
    # nodes registered as shared) keeps a GPU at one GPU-hour per hour even if that list is stale.
    sharers: dict[tuple, set[tuple]] = defaultdict(set)
    for a in items:
        sharers[(a.sample.device, a.sample.time)].add(_series(a))
    return [
        (a, span[i].total_seconds() / 3600 / len(sharers[(a.sample.device, a.sample.time)]))
        for i, a in enumerate(items)
    ]


def usage_by_tenant_day(attributed: Iterable[Attributed], **weights: timedelta) -> list[UsageRow]:
    """GPU-hours, MIG slice-hours and busy GPU-hours per (UTC day, tenant), sorted.

    `weights` (default_interval, max_gap) go to weighted(), as in the functions below."""
    totals: dict[tuple[date, str], _Row] = defaultdict(_Row)
    for a, hours in weighted(attributed, **weights):
        s = a.sample
        row = totals[(_day(s.time), tenant_key(a))]
        if s.gi_id:
            # Slice-hours, not GPU-hours: a 3g instance is three slices of one GPU.
            row.mig += hours * mig_slices(s.gi_profile)
        else:
            row.gpu += hours
            row.busy += hours * _pct(s.busy) / 100.0
        row.confidences.add(a.confidence)
    return [
        UsageRow(day, tenant, r.gpu, r.mig, r.busy_or_unknown(), worst_confidence(r.confidences))
        for (day, tenant), r in sorted(totals.items())
    ]


def chargeback(rows: Iterable[UsageRow]) -> list[ChargebackRow]:
    """Totals per tenant over the rows given (the caller picks the period), sorted by tenant."""
    totals: dict[str, _Row] = defaultdict(_Row)
    days: dict[str, set[date]] = defaultdict(set)
    for r in rows:
        t = totals[r.tenant]
        t.gpu += r.gpu_hours
        t.mig += r.mig_slice_hours
        t.busy += r.busy_gpu_hours or 0.0
        days[r.tenant].add(r.day)
    return [
        ChargebackRow(tenant, t.gpu, t.mig, t.busy_or_unknown(), len(days[tenant]))
        for tenant, t in sorted(totals.items())
    ]


def top_gpus(
    attributed: Iterable[Attributed],
    *,
    n: int = 10,
    **weights: timedelta,
) -> list[GpuUse]:
    """The n devices with the most busy hours, then the most hours (device breaks ties)."""
    busy: dict[Device, _Busy] = defaultdict(_Busy)
    models: dict[Device, str] = {}
    tenants: dict[Device, set[str]] = defaultdict(set)
    for a, hours in weighted(attributed, **weights):
        s = a.sample
        busy[s.device].add(hours, s.busy)
        models[s.device] = models.get(s.device) or s.model
        tenants[s.device].add(tenant_key(a))
    ranked = sorted(busy.items(), key=lambda kv: (-kv[1].busy_hours, -kv[1].hours, kv[0]))
    return [
        GpuUse(device, models[device], b.hours, b.mean(), tuple(sorted(tenants[device])))
        for device, b in ranked[:n]
    ]


def idle_allocated(
    attributed: Iterable[Attributed],
    *,
    threshold: float = 5.0,
    min_hours: float = 1.0,
    **weights: timedelta,
) -> list[IdleGpu]:
    """Devices a tenant held for at least min_hours on a UTC day at a time-weighted mean busy
    under threshold percent. Hours are the tenant's share (1/k on a shared GPU)."""
    busy: dict[tuple[date, Device, str], _Busy] = defaultdict(_Busy)
    for a, hours in weighted(attributed, **weights):
        if a.attribution == "tenant":
            busy[(_day(a.sample.time), a.sample.device, tenant_key(a))].add(hours, a.sample.busy)
    found = []
    for (day, device, tenant), b in sorted(busy.items()):
        mean = b.mean()
        # No busy value at all is no evidence of idleness: skip rather than report 0 %.
        if b.hours >= min_hours and mean is not None and mean < threshold:
            found.append(IdleGpu(day, device, tenant, b.hours, mean))
    return found


def tenant_key(a: Attributed) -> str:
    """The tenant's slug, or "platform" / "unattributed"."""
    return a.tenant if a.attribution == "tenant" and a.tenant else a.attribution


def mig_slices(profile: str) -> int:
    """Compute slices of a MIG profile: "3g.40gb" -> 3, "1g.10gb+me" -> 1; unknown -> 1."""
    m = re.match(r"(\d+)g\.", profile)
    return int(m.group(1)) if m and int(m.group(1)) > 0 else 1


@dataclass
class _Row:
    gpu: float = 0.0
    mig: float = 0.0
    busy: float = 0.0
    confidences: set[str] = field(default_factory=set)

    def busy_or_unknown(self) -> float | None:
        """Busy GPU-hours, or None for MIG time alone (no utilisation metric per instance)."""
        return None if not self.gpu and self.mig else self.busy


@dataclass
class _Busy:
    hours: float = 0.0
    known_hours: float = 0.0  # hours of samples that had a busy value
    busy_hours: float = 0.0

    def add(self, hours: float, busy: float | None) -> None:
        self.hours += hours
        if busy is not None:
            self.known_hours += hours
            self.busy_hours += hours * _pct(busy) / 100.0

    def mean(self) -> float | None:
        return 100.0 * self.busy_hours / self.known_hours if self.known_hours else None


def _order(a: Attributed) -> tuple:
    s = a.sample
    return (s.device, s.time, s.namespace, s.pod, s.container)


def _series(a: Attributed) -> tuple:
    return (a.sample.device, a.sample.namespace, a.sample.pod)


def _pct(busy: float | None) -> float:
    # Clamped: an exporter glitch above 100 % must not make a GPU busier than one GPU.
    return min(max(busy or 0.0, 0.0), 100.0)


def _day(t: datetime) -> date:
    return t.astimezone(UTC).date()
