"""Which Namespace objects a full sync reads tenants' ownership from (DESIGN §7).

A sync that certainly did not read the Namespace kind (an export of a running cluster holding
none, a live list refused: inventory.kinds_read) says nothing about the namespaces' labels. As
drift compares only the kinds both syncs read (inventory.drift_scope) and a watch re-sync keeps
what it did not see change, ownership by the `gpuposture.io/tenant` label then reads the
Namespace objects the last sync that read them stored, and the sync keeps them (not "gone");
the run says so. Never read: the labels are unknown, and a namespace the tenant registry does
not list is owned by no tenant (fail closed).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import UTC, datetime

from django.db.models import QuerySet

from inventory import snapshot as snap
from inventory.models import ClusterObject, SyncRun
from tenants.mapping import TENANT_LABEL

NAMESPACE = "Namespace"  # the kind, as kinds_unread names it
STORED_KIND = "namespace"  # the ClusterObject kind (inventory.sync_rows.OBJECT_KINDS)


def owning_namespaces(
    run: SyncRun, read: Sequence[snap.Namespace], unread: Collection[str]
) -> tuple[Sequence[snap.Namespace], list[str]]:
    """The namespaces whose labels say who owns what in this sync, and the run's warning on
    where they come from: `read` (the snapshot's) unless the Namespace kind is in `unread`,
    else the stored ones."""
    if NAMESPACE not in unread:
        return read, []
    stored = [
        snap.from_dict(snap.Namespace, data)
        for data in ClusterObject.objects.filter(cluster=run.cluster, kind=STORED_KIND).values_list(
            "data", flat=True
        )
    ]
    if not stored:
        return [], [
            f"Namespaces were not read, and no earlier sync read them: their labels are unknown, "
            f"so a namespace the tenant registry does not list is owned by no tenant (its "
            f"{TENANT_LABEL} label is not seen)"
        ]
    when = _last_read(run)
    at = f" ({when:%Y-%m-%d %H:%M} UTC)" if when else ""
    return stored, [
        f"Namespaces were not read: the namespace labels ({TENANT_LABEL} for tenants' "
        f"namespaces) are from the last sync in which Namespaces were read{at}"
    ]


def good_full_syncs_before(run: SyncRun) -> QuerySet[SyncRun]:
    """The cluster's succeeded full syncs other than `run`, latest first."""
    return (
        SyncRun.objects.filter(
            cluster=run.cluster, status=SyncRun.Status.SUCCEEDED, mode=SyncRun.Mode.FULL
        )
        .exclude(pk=run.pk)
        .order_by("-started_at", "-id")
    )


def _last_read(run: SyncRun) -> datetime | None:
    """When the cluster's last good full sync that read Namespaces started (None: unknown)."""
    runs = good_full_syncs_before(run).values_list("started_at", "kinds_unread")
    for started, unread in runs.iterator():
        if NAMESPACE not in (unread or ()):
            return started.astimezone(UTC)
    return None
