"""Re-booking usage stored before namespaces nobody claims were the unclassified party's: such
samples were attributed to the platform (DESIGN §3: nothing unknown is the platform's). Run by
migration 0003 once; harmless to run again (nothing is left to re-book)."""

from __future__ import annotations

from django.db import transaction
from django.db.models import Max, Min

from inventory.models import Cluster
from telemetry.ingest_context import attribution_context
from telemetry.models import Attribution, GpuReading
from telemetry.rollup import ingested_hours_rollup
from tenants.services import unclassified_tenant_ensure


@transaction.atomic
def unclaimed_usage_rebook(cluster: Cluster) -> int:
    """Book the cluster's raw samples booked to the platform from a namespace that is not a
    platform namespace to the unclassified tenant, then roll their hours up again. Returns
    how many samples moved. Hours whose raw samples are past the retention keep what they
    say: their roll-ups name no namespace, so they cannot be told apart."""
    _owners, _shared, platform = attribution_context(cluster)
    wrong = (
        GpuReading.objects.filter(cluster=cluster, attribution=Attribution.PLATFORM)
        .exclude(namespace="")
        .exclude(namespace__in=platform)
    )
    # A namespace a tenant claimed since was nobody's when it was read: the unclassified
    # party's then, not the new owner's (ownership is not back-dated).
    if not wrong.exists():
        return 0
    span = wrong.aggregate(first=Min("time"), last=Max("time"))
    unclassified = unclassified_tenant_ensure()
    moved = wrong.update(attribution=Attribution.TENANT, tenant=unclassified)
    ingested_hours_rollup(cluster=cluster, first=span["first"], last=span["last"])
    return moved


def all_unclaimed_usage_rebook() -> int:
    return sum(unclaimed_usage_rebook(c) for c in Cluster.objects.all())
