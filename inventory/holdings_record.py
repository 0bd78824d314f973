"""Keep each exclusive GPU node's holder record across syncs and record the handovers between
tenants it makes certain (inventory.holdings). One row per node, written only where its
holders changed; one UPDATE moves `last_seen` of every unchanged set: a re-sync with nothing
changed records nothing new."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta

from django.conf import settings

from inventory import snapshot as snap
from inventory.holding_models import GpuHolders, SyncHandover
from inventory.holdings import Held, HoldingHandover, exclusive_holders, holders_step
from inventory.models import Cluster, Node, Pod, SyncRun
from inventory.sync_rows import BATCH, chunks
from tenants.models import Tenant


def owner_slugs(owners: Mapping[str, int]) -> dict[str, str]:
    """namespace -> tenant slug, from the sync's namespace -> tenant id."""
    slugs = dict(Tenant.objects.values_list("pk", "slug"))
    return {ns: slugs[pk] for ns, pk in owners.items() if pk in slugs}


def holdings_record(
    run: SyncRun,
    found: Mapping[str, tuple[int, dict[str, int]]],
    owners: Mapping[str, str],
    now: datetime,
    scope: Iterable[str] | None = None,
) -> int:
    """Apply this sync's holders (`found`: exclusive_holders) to the stored records of the
    nodes in `scope` (None: every node, a full sync); returns the handovers recorded, each side
    named by its party now (`owners`: namespace -> tenant slug). Nodes in scope that are no
    longer exclusive GPU nodes lose their record (nothing to compare)."""
    cluster = run.cluster
    rows = GpuHolders.objects.filter(cluster=cluster)
    if scope is not None:
        rows = rows.filter(node_name__in=list(scope))
    stored = {
        name: (pk, Held(holders, gpus, first, last, whole, _times(seen)))
        for pk, name, holders, gpus, first, last, whole, seen in rows.values_list(
            "pk",
            "node_name",
            "holders",
            "gpu_count",
            "first_seen",
            "last_seen",
            "whole",
            "holders_seen",
        )
    }
    names = set(stored) | set(found) if scope is None else set(scope)
    handovers: list[HoldingHandover] = []
    create: list[GpuHolders] = []
    update: list[GpuHolders] = []
    gone: dict[str, int] = {}
    for name in sorted(names):
        pk, before = stored.get(name, (None, None))
        after: Held | None = None
        if name in found:
            gpus, holders = found[name]
            after, more = holders_step(name, before, gpus, holders, now, owners)
            handovers += more
        if pk is None or before is None:
            if after is not None:
                create.append(_row(cluster, name, after))
        elif after is None:
            gone[name] = pk
        elif after.whole and before.whole and after.holders == before.holders:
            continue  # seen whole again: the one UPDATE below moves its last_seen
        elif after != before:
            update.append(_row(cluster, name, after, pk))
    # The sets seen whole again (most nodes, most syncs): one statement, not one per node.
    written = sorted({r.node_name for r in update} | set(gone))
    GpuHolders.objects.filter(cluster=cluster, whole=True).exclude(node_name__in=written).update(
        last_seen=now
    )
    for batch in chunks(list(gone.values())):
        GpuHolders.objects.filter(pk__in=batch).delete()
    GpuHolders.objects.bulk_create(create, batch_size=BATCH)
    GpuHolders.objects.bulk_update(
        update,
        ["gpu_count", "holders", "first_seen", "last_seen", "whole", "holders_seen"],
        batch_size=BATCH,
    )
    # Each side is its party already (holders_step with owners): two namespaces of one tenant
    # are one party, its own reuse is no handover, and their GPUs count together.
    SyncHandover.objects.bulk_create(
        [
            SyncHandover(
                cluster=cluster,
                sync_run=run,
                node_name=h.node,
                previous_holder=h.previous,
                next_holder=h.next,
                previous_gpus=h.previous_gpus,
                next_gpus=h.next_gpus,
                gpu_count=h.gpu_count,
                previous_end=h.previous_end,
                next_start=h.next_start,
            )
            for h in handovers
        ],
        batch_size=BATCH,
    )
    # Kept as long as raw telemetry is, so both sources of LEAK-001 look back as far.
    retention = timedelta(days=settings.GPUPOSTURE_TELEMETRY_RETENTION_DAYS)
    SyncHandover.objects.filter(cluster=cluster, next_start__lt=now - retention).delete()
    return len(handovers)


def _row(cluster: Cluster, name: str, held: Held, pk: int | None = None) -> GpuHolders:
    return GpuHolders(
        pk=pk,
        cluster=cluster,
        node_name=name,
        gpu_count=held.gpu_count,
        holders=held.holders,
        first_seen=held.first_seen,
        last_seen=held.last_seen,
        whole=held.whole,
        holders_seen={namespace: time.isoformat() for namespace, time in held.seen.items()},
    )


def _times(stored: dict[str, str] | None) -> dict[str, datetime]:
    return {namespace: datetime.fromisoformat(t) for namespace, t in (stored or {}).items()}


def stored_holders(cluster: Cluster, names: Iterable[str]) -> dict[str, tuple[int, dict[str, int]]]:
    """exclusive_holders of these nodes as the database now holds them (a watch re-sync, after
    writing what it saw change)."""
    names = sorted(set(names))
    if not names:
        return {}
    nodes = Node.objects.filter(cluster=cluster, name__in=names).values_list("data", flat=True)
    pods = Pod.objects.filter(cluster=cluster, node__name__in=names).values_list("data", flat=True)
    return exclusive_holders(
        [snap.from_dict(snap.Node, d) for d in nodes],
        [snap.from_dict(snap.Pod, d) for d in pods.iterator(chunk_size=BATCH)],
    )
