"""The handovers sync history recorded (inventory.holdings) with no reset attested between the
two syncs that bound each, for LEAK-001 where no telemetry shows the GPU (or beside it)."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from inventory.holding_models import SyncHandover
from inventory.holdings import Devices, HoldingHandover
from inventory.models import Cluster
from telemetry.leak import MINUTE, reset_between
from telemetry.models import ResetAttestation


def unattested_sync_handovers(
    cluster: Cluster, now: datetime | None = None
) -> tuple[HoldingHandover, ...]:
    """Recorded handovers within the telemetry retention not attested between the last sync that
    saw the previous holder and the one that first saw the next: by a reset of the node, of the
    one GPU the devices are on (a DRA device's), or of as many of its GPUs as could hold the
    devices that surely passed (HoldingHandover.passed; Devices.attested). Which GPUs passed is
    not known at sync granularity: fewer resets than that leave one surely unreset; as many may
    be the ones, so the handover is no longer certain and is not reported."""
    now = now or timezone.now()
    since = now - timedelta(days=settings.GPUPOSTURE_TELEMETRY_RETENTION_DAYS)
    rows = SyncHandover.objects.filter(cluster=cluster, next_start__gte=since).order_by(
        "node_name", "next_start", "id"
    )
    found = [
        HoldingHandover(
            r.node_name,
            r.previous_holder,
            r.next_holder,
            r.previous_gpus,
            r.next_gpus,
            r.gpu_count,
            r.previous_end,
            r.next_start,
            Devices(r.devices, r.gpu_uuid, r.per_gpu),
            tuple(r.between),
            r.node_identity,
        )
        for r in rows
    ]
    if not found:
        return ()
    # node -> GPU UUID ("" for the node's every GPU) -> sorted reset times
    resets: dict[str, dict[str, list[datetime]]] = defaultdict(lambda: defaultdict(list))
    for node, uuid, time in ResetAttestation.objects.filter(
        cluster=cluster,
        node__in={h.node for h in found},
        reset_at__gte=min(h.previous_end for h in found) - MINUTE,
    ).values_list("node", "gpu_uuid", "reset_at"):
        resets[node][uuid].append(time)
    for by_gpu in resets.values():
        for times in by_gpu.values():
            times.sort()
    return tuple(h for h in found if not _attested(resets[h.node], h))


def _attested(by_gpu: dict[str, list[datetime]], h: HoldingHandover) -> bool:
    reset = {
        uuid for uuid, times in by_gpu.items() if reset_between(times, h.previous_end, h.next_start)
    }
    return h.devices.attested(reset, h.passed)
