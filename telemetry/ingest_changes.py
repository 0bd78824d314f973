"""Whether a batch of DCGM samples can move what the checks read from telemetry, so that an
ingest asks for a re-score only then (telemetry.services): beat reads each source every few
minutes, and re-scoring a large cluster on every read of a quiet fleet costs for nothing.

The checks read (telemetry.facts): which GPU nodes reported lately (ATTR-003), busy runs no
scheduled pod explains and busy hosts the inventory does not list (ATTR-001, ATTR-002), and
who held each exclusive GPU sample by sample (LEAK-001). A batch can move them only if it
brings, after what is stored of a device (a GPU or MIG instance), or before it but not stored
(a backfill, a second source, reads out of order):
- a device with no sample in the lookback: a first ingest, a silent node speaking again, a new
  GPU or host;
- a busy reading: whether a pod held the GPU then depends on the inventory's pods, which only
  scoring weighs;
- a reading that ends a silence (ATTR-003);
- other holders (tenant, namespace, attribution, confidence) than its latest stored sample's:
  a GPU passed on, or a node whose exporter starts or stops naming pods.
Idle readings of known devices by the same holders move nothing.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Max
from django.utils import timezone

from inventory.models import Cluster
from telemetry.models import GpuReading

Device = tuple[str, str, str]  # hostname, uuid (else the gpu index), MIG instance
Holder = tuple[int | None, str, str, str]  # tenant id, namespace, attribution, confidence
HOLDING = (
    "hostname",
    "uuid",
    "gpu",
    "gi_id",
    "tenant_id",
    "namespace",
    "attribution",
    "confidence",
)


def lookback() -> timedelta:
    """How far back a device counts as reporting. Never longer than the silence window: a node
    quiet for longer is silent (ATTR-003) and its next sample must re-score. A shorter one only
    re-scores more often (a source read less often than this re-scores on each read)."""
    return timedelta(
        minutes=min(
            settings.GPUPOSTURE_SILENT_NODE_MINUTES, settings.GPUPOSTURE_HIJACK_WINDOW_MINUTES
        )
    )


def readings_move_checks(
    cluster: Cluster, readings: list[GpuReading], *, now: datetime | None = None
) -> bool:
    """Whether these readings (not stored yet: call before storing them) can move a telemetry
    check. One grouped query over the lookback before the batch, and one more where some of
    its readings are not later than what is stored."""
    now = now or timezone.now()
    silent_since = now - timedelta(minutes=settings.GPUPOSTURE_SILENT_NODE_MINUTES)
    threshold = float(settings.GPUPOSTURE_HIJACK_THRESHOLD_PERCENT)
    # device -> time -> (who the readings at that time name, whether one of them is busy)
    batch: dict[Device, dict[datetime, tuple[set[Holder], list[bool]]]] = defaultdict(dict)
    for r in readings:
        holders, busy = batch[_device(r.hostname, r.uuid, r.gpu, r.gi_id)].setdefault(
            r.time, (set(), [False])
        )
        holders.add((r.tenant_id, r.namespace, r.attribution, r.confidence))
        level = r.gr_active * 100.0 if r.gr_active is not None else r.util  # GpuSample.busy
        busy[0] = busy[0] or (level is not None and level > threshold)
    if not batch:
        return False
    first = min(t for times in batch.values() for t in times)
    latest = _latest_stored(cluster, {host for host, _, _ in batch}, first - lookback())
    for device, times in batch.items():
        if device not in latest:
            return True  # no sample in the lookback: a new or silent device speaks
        last_time, held = latest[device]
        # Only the readings after the stored ones are new: those at or before them are most
        # often what a Prometheus read's overlap reads again (skipped when stored).
        for time in sorted(t for t in times if t > last_time):
            holders, busy = times[time]
            if busy[0] or holders != held:
                return True
            if last_time < silent_since <= time:
                return True  # a late sample, yet a node quiet past the silence speaks again
            held, last_time = holders, time
    return _backfill_moves_checks(cluster, batch, latest)


def _backfill_moves_checks(
    cluster: Cluster,
    batch: dict[Device, dict[datetime, tuple[set[Holder], list[bool]]]],
    latest: dict[Device, tuple[datetime, set[Holder]]],
) -> bool:
    """Readings at or before a device's latest stored sample are new all the same when they
    are not stored: a Prometheus backfill after a file ingest, a second source, reads out of
    order. Busy, or held by others than the device's latest holders, they can move a check as
    a later reading would. One query: the stored (device, time) pairs of their time range."""
    older = {
        device: {t: seen for t, seen in times.items() if t <= latest[device][0]}
        for device, times in batch.items()
    }
    older = {device: times for device, times in older.items() if times}
    if not older:
        return False
    moments = [t for times in older.values() for t in times]
    rows = (
        GpuReading.objects.filter(
            cluster=cluster,
            hostname__in={host for host, _, _ in older},
            time__gte=min(moments),
            time__lte=max(moments),
        )
        .values_list("hostname", "uuid", "gpu", "gi_id", "time")
        .distinct()
        .order_by()
    )
    stored = {(_device(host, uuid, gpu, gi_id), t) for host, uuid, gpu, gi_id, t in rows}
    for device, times in older.items():
        held = latest[device][1]
        for time, (holders, busy) in times.items():
            if (device, time) not in stored and (busy[0] or holders != held):
                return True
    return False


def _device(hostname: str, uuid: str, gpu: str, gi_id: str) -> Device:
    return (hostname, uuid or gpu, gi_id)


def _latest_stored(
    cluster: Cluster, hosts: set[str], since: datetime
) -> dict[Device, tuple[datetime, set[Holder]]]:
    """Each device's latest stored sample time since `since`, and who held it then (every
    holder whose last sample is at that time: the exporter emits a device once per pod)."""
    rows = (
        GpuReading.objects.filter(cluster=cluster, hostname__in=hosts, time__gte=since)
        .values(*HOLDING)
        .annotate(last=Max("time"))
        .values_list(*HOLDING, "last")
        .order_by()
    )
    latest: dict[Device, tuple[datetime, set[Holder]]] = {}
    for host, uuid, gpu, gi_id, tenant, namespace, attribution, confidence, last in rows:
        device = _device(host, uuid, gpu, gi_id)
        holder = (tenant, namespace, attribution, confidence)
        seen = latest.get(device)
        if seen is None or last > seen[0]:
            latest[device] = (last, {holder})
        elif last == seen[0]:
            seen[1].add(holder)
    return latest
