"""Re-booking usage stored under an older attribution rule, each run once by a migration and
harmless to run again (nothing is left to re-book): namespaces nobody claims were the platform's
(0003; DESIGN §3: nothing unknown is the platform's), and a pod label the last sync contradicted
was its pod's owner's (0005; telemetry.attribution: it is nobody's)."""

from __future__ import annotations

from django.db import transaction
from django.db.models import Max, Min

from inventory.models import Cluster
from telemetry.ingest_context import attribution_context
from telemetry.models import Attribution, Confidence, GpuReading
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


@transaction.atomic
def contradicted_labels_rebook(cluster: Cluster) -> int:
    """Book the cluster's raw samples stored under a pod label at confidence none, as they were
    before a label the last sync contradicts (its pod bound to another node) was booked to
    nobody, to nobody; then roll their hours up again. Returns how many samples moved.

    Before, such a sample went to the named pod's owner at "none", and no other sample naming
    a pod was stored at "none" (a pod the sync did not list was booked "exact"). Left so, each
    would now read as a pod the sync did not list, booked as the label says (LEAK-001 counts
    those as holders): a forged label's hours would stay on another tenant's chargeback and
    make a handover. Hours whose raw samples are past the retention keep what they say."""
    wrong = (
        GpuReading.objects.filter(cluster=cluster, confidence=Confidence.NONE)
        .exclude(attribution=Attribution.UNATTRIBUTED)
        .exclude(pod="")
    )
    if not wrong.exists():
        return 0
    span = wrong.aggregate(first=Min("time"), last=Max("time"))
    moved = wrong.update(attribution=Attribution.UNATTRIBUTED, tenant=None)
    ingested_hours_rollup(cluster=cluster, first=span["first"], last=span["last"])
    return moved


def all_contradicted_labels_rebook() -> int:
    return sum(contradicted_labels_rebook(c) for c in Cluster.objects.all())
