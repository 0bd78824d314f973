"""The handovers sync history recorded (inventory.holdings) with no reset attested between the
two syncs that bound each, for LEAK-001 where no telemetry shows the GPU (or beside it)."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from inventory.holding_models import SyncHandover
from inventory.holdings import HoldingHandover
from inventory.models import Cluster
from telemetry.leak import MINUTE, reset_between
from telemetry.models import ResetAttestation


def unattested_sync_handovers(
    cluster: Cluster, now: datetime | None = None
) -> tuple[HoldingHandover, ...]:
    """Recorded handovers within the telemetry retention with no reset attestation of their
    node, or of any GPU of it, between the last sync that saw the previous holder and the one
    that first saw the next: which GPU passed is not known at sync granularity, so a reset of
    any of them is taken as the one."""
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
        )
        for r in rows
    ]
    if not found:
        return ()
    resets: dict[str, list[datetime]] = defaultdict(list)
    for node, time in ResetAttestation.objects.filter(
        cluster=cluster,
        node__in={h.node for h in found},
        reset_at__gte=min(h.previous_end for h in found) - MINUTE,
    ).values_list("node", "reset_at"):
        resets[node].append(time)
    for times in resets.values():
        times.sort()
    return tuple(
        h for h in found if not reset_between(resets[h.node], h.previous_end, h.next_start)
    )
