"""Keep the holder record of each node's exclusive GPU devices across syncs and record the
handovers between tenants it makes certain (inventory.holdings). One row per node and set of
devices (inventory.holding_sets), written only where its holders changed; one UPDATE moves
`last_seen` of every unchanged set: a re-sync with nothing changed records nothing new."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import datetime, timedelta

from django.conf import settings

from inventory import snapshot as snap
from inventory.env_holds import may_set_visible_devices
from inventory.holding_models import GpuHolders, SyncHandover
from inventory.holding_sets import Found, exclusive_holders
from inventory.holdings import Held, HoldingHandover, holders_step
from inventory.models import Cluster, ClusterObject, Node, Pod, SyncRun
from inventory.sync_rows import BATCH, chunks
from tenants.models import Tenant

# A record's fields past its key (node, devices), in the order holdings.Held takes them.
RECORD_FIELDS = (
    "holders",
    "gpu_count",
    "first_seen",
    "last_seen",
    "whole",
    "holders_seen",
    "between",
    "node_uid",
)


def owner_slugs(owners: Mapping[str, int]) -> dict[str, str]:
    """namespace -> tenant slug, from the sync's namespace -> tenant id."""
    slugs = dict(Tenant.objects.values_list("pk", "slug"))
    return {ns: slugs[pk] for ns, pk in owners.items() if pk in slugs}


def holdings_record(
    run: SyncRun,
    found: Found,
    owners: Mapping[str, str],
    now: datetime,
    scope: Iterable[str] | None = None,
    platform: frozenset[str] = frozenset(),
) -> int:
    """Apply this sync's holder sets (`found`: exclusive_holders) to the stored records of the
    nodes in `scope` (None: every node, a full sync); returns the handovers recorded, each side
    named by its party now (`owners`: namespace -> tenant slug; `platform`: the platform's
    namespaces, whose holdings are no party's: inventory.holdings). A set no longer found on a
    node in scope (the node shares its GPUs now, a DRA device is gone) loses its record
    (nothing to compare)."""
    cluster = run.cluster
    stored = _stored(cluster, scope)
    handovers: list[HoldingHandover] = []
    create: list[GpuHolders] = []
    update: list[GpuHolders] = []
    gone: list[int] = []
    for key in sorted(set(stored) | set(found)):
        pk, before = stored.get(key, (None, None))
        after: Held | None = None
        if key in found:
            held = found[key]
            after, more = holders_step(
                key[0],
                before,
                held.count,
                held.holders,
                now,
                owners,
                held.devices,
                platform,
                held.workloads,
                held.node,
            )
            handovers += more
        if pk is None or before is None:
            if after is not None:
                create.append(_row(cluster, key, after))
        elif after is None:
            gone.append(pk)
        elif after.whole and before.whole and after == replace(before, last_seen=now):
            continue  # seen whole again, same machine: the one UPDATE below moves its last_seen
        elif after != before:
            update.append(_row(cluster, key, after, pk))
    # The sets seen whole again (most sets, most syncs): one statement, not one per set.
    written = [r.pk for r in update] + gone
    GpuHolders.objects.filter(cluster=cluster, whole=True).exclude(pk__in=written).update(
        last_seen=now
    )
    for batch in chunks(gone):
        GpuHolders.objects.filter(pk__in=batch).delete()
    GpuHolders.objects.bulk_create(create, batch_size=BATCH)
    GpuHolders.objects.bulk_update(update, list(RECORD_FIELDS), batch_size=BATCH)
    # Each side is its party already (holders_step with owners): two namespaces of one tenant
    # are one party, its own reuse is no handover, and their GPUs count together.
    SyncHandover.objects.bulk_create(
        [_handover_row(cluster, run, h) for h in handovers], batch_size=BATCH
    )
    # Kept as long as raw telemetry is, so both sources of LEAK-001 look back as far.
    retention = timedelta(days=settings.GPUPOSTURE_TELEMETRY_RETENTION_DAYS)
    SyncHandover.objects.filter(cluster=cluster, next_start__lt=now - retention).delete()
    return len(handovers)


def _stored(
    cluster: Cluster, scope: Iterable[str] | None
) -> dict[tuple[str, str], tuple[int, Held]]:
    """(node, devices) -> (pk, record) of the stored sets of the nodes in scope."""
    rows = GpuHolders.objects.filter(cluster=cluster)
    if scope is not None:
        rows = rows.filter(node_name__in=list(scope))
    fields = ("pk", "node_name", "devices", *RECORD_FIELDS)
    return {
        (name, devices): (
            pk,
            Held(holders, gpus, first, last, whole, _times(seen), tuple(between or ()), uid),
        )
        for pk, name, devices, holders, gpus, first, last, whole, seen, between, uid in (
            rows.values_list(*fields)
        )
    }


def _handover_row(cluster: Cluster, run: SyncRun, h: HoldingHandover) -> SyncHandover:
    return SyncHandover(
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
        devices=h.devices.name,
        gpu_uuid=h.devices.gpu_uuid,
        per_gpu=h.devices.per_gpu,
        between=list(h.between),
        node_identity=h.node_identity,
    )


def _row(cluster: Cluster, key: tuple[str, str], held: Held, pk: int | None = None) -> GpuHolders:
    return GpuHolders(
        pk=pk,
        cluster=cluster,
        node_name=key[0],
        devices=key[1],
        gpu_count=held.gpu_count,
        holders=held.holders,
        first_seen=held.first_seen,
        last_seen=held.last_seen,
        whole=held.whole,
        holders_seen={namespace: time.isoformat() for namespace, time in held.seen.items()},
        between=list(held.between),
        node_uid=held.node_uid,
    )


def _times(stored: dict[str, str] | None) -> dict[str, datetime]:
    return {namespace: datetime.fromisoformat(t) for namespace, t in (stored or {}).items()}


def stored_holders(
    cluster: Cluster,
    names: Iterable[str],
    platform: frozenset[str],
    tenant_claimed: frozenset[str] = frozenset(),
) -> Found:
    """exclusive_holders of these nodes as the database now holds them (a watch re-sync, after
    writing what it saw change): the GPU nodes among them and the ResourceSlices publishing on
    them, their pods, and the claims, device classes, plugin configs, ClusterPolicies and env
    ConfigMaps those pods' holdings are judged by (`platform`: the platform's namespaces nobody
    claims; `tenant_claimed`: the namespaces tenants claim). A node with neither holds no set:
    its pods are not read."""
    names = sorted(set(names))
    if not names:
        return {}
    objects = ClusterObject.objects.filter(cluster=cluster)
    rows = objects.filter(kind="dra_slice", data__node_name__in=names)
    slices = _objects(rows, snap.DraSlice)
    nodes = [
        snap.from_dict(snap.Node, d)
        for d in Node.objects.filter(cluster=cluster, name__in=names).values_list("data", flat=True)
    ]
    held = {n.name for n in nodes if n.is_gpu_node} | {s.node_name for s in slices}
    rows = Pod.objects.filter(cluster=cluster, node__name__in=sorted(held))
    pods = _objects(rows, snap.Pod)
    stored = _stored_objects(objects, slices, pods)
    return exclusive_holders(nodes, pods, stored, platform, tenant_claimed)


def _stored_objects(objects, slices: list, pods: list[snap.Pod]) -> snap.ClusterSnapshot:
    """The stored objects exclusive_holders reads beside the slices, only where a pod uses a
    claim or may set NVIDIA_VISIBLE_DEVICES."""
    found: dict[str, list] = {"dra_slices": slices}
    if slices and any(p.resource_claims for p in pods):
        # Every claim: whether another claim shares a device is read from all that hold it.
        found["dra_claims"] = _objects(objects.filter(kind="dra_claim"), snap.DraClaim)
        classes = objects.filter(kind="dra_device_class")
        found["dra_device_classes"] = _objects(classes, snap.DraDeviceClass)
    namespaces = {p.namespace for p in pods if may_set_visible_devices(p)}
    if namespaces:
        configmaps = objects.filter(kind="env_configmap", namespace__in=namespaces)
        found["env_configmaps"] = _objects(configmaps, snap.EnvConfigMap)
        configs = objects.filter(kind="sharing_config")
        found["sharing_configs"] = _objects(configs, snap.SharingConfig)
        policies = objects.filter(kind="gpu_operator_policy")
        found["gpu_operator_policies"] = _objects(policies, snap.GpuOperatorPolicy)
    return snap.ClusterSnapshot(**{k: tuple(v) for k, v in found.items()})


def _objects(rows, cls: type) -> list:
    return [
        snap.from_dict(cls, d)
        for d in rows.values_list("data", flat=True).iterator(chunk_size=BATCH)
    ]
