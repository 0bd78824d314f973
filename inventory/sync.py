"""Apply a ClusterSnapshot to the database atomically, recording a SyncRun (STYLE rule 5).

The run row is written outside the apply transaction, so a failed apply rolls back every
inventory change while the failure itself stays recorded. Rows are compared by a hash of
their normalised data and only changed rows are written, so a re-sync costs what changed
(the rows and their writers are in inventory/sync_rows.py).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from audit.services import CREATE, Actor, audit_record
from inventory import snapshot as snap
from inventory.audit_state import cluster_state
from inventory.drift import ClusterState, DriftChange, detect_drift, gpu_config_within
from inventory.drift_scope import read_in_both
from inventory.holding_sets import exclusive_holders
from inventory.holdings_record import holdings_record, owner_slugs
from inventory.hostfacts import merge_host_facts
from inventory.kinds_read import (
    RESOURCE_SLICE,
    exported_from_a_real_cluster,
    kinds_read,
    kinds_referenced,
    kinds_unread,
    unread_warnings,
)
from inventory.mig_state import carry_mig_state
from inventory.models import Cluster, ClusterObject, DriftEvent, Node, NodeHostFacts, Pod, SyncRun
from inventory.slices_unread import slice_facts_kept
from inventory.sync_namespaces import (
    NAMESPACE,
    STORED_KIND,
    good_full_syncs_before,
    owning_namespaces,
)
from inventory.sync_owner_links import owner_links_kept
from inventory.sync_rows import BATCH, Changes, chunks, nodes_write, objects_write, pod_rows_write
from tenants.mapping import claimed_namespaces, resolve_namespace_owners
from tenants.models import Tenant, TenantNamespace
from tenants.selectors import pool_taint_rules

logger = logging.getLogger(__name__)


class SyncError(Exception):
    """A sync could not complete; the message is stored on the failed SyncRun."""

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.retryable = retryable


def cluster_get_or_create(*, name: str, actor: Actor = None) -> Cluster:
    """The cluster of this name, registered (an audit event by `actor`) if new."""
    with transaction.atomic():
        cluster, created = Cluster.objects.get_or_create(name=name)
        if created:
            audit_record(actor=actor, action=CREATE, obj=cluster, after=cluster_state(cluster))
    return cluster


def sync_run_start(*, cluster: Cluster, source: str, trigger: str = "cli") -> SyncRun:
    return SyncRun.objects.create(cluster=cluster, source=source[:300], trigger=trigger[:20])


def sync_run_fail(*, run: SyncRun, error: str) -> SyncRun:
    run.status = SyncRun.Status.FAILED
    run.error = error[:4000]
    run.finished_at = timezone.now()
    run.save(update_fields=["status", "error", "finished_at"])
    logger.warning("sync of %s failed: %s", run.cluster.name, error)
    return run


def snapshot_apply(*, run: SyncRun, snapshot: snap.ClusterSnapshot) -> SyncRun:
    """Apply the snapshot in one transaction; on any error the previous inventory stays and
    the run is marked failed with the reason."""
    now = timezone.now()
    try:
        with transaction.atomic(), snap.gc_paused():  # rows of a whole cluster, no cycles
            changes, drift, said = _apply(run, snapshot, now)
            record_drift(run, drift, now)
    except Exception as exc:  # noqa: BLE001 - every failure must be recorded, then re-raised
        sync_run_fail(run=run, error=f"applying the snapshot failed: {exc}")
        raise SyncError(str(exc)) from exc
    run.status = SyncRun.Status.SUCCEEDED
    run.counts = dict(snapshot.counts)
    run.progress = dict(snapshot.counts)
    run.changes = {**changes, "drift_events": len(drift)}
    run.kinds_unread = _unread(snapshot)
    # The kinds the snapshot's own objects prove were left out (a live refusal says its own).
    proven = unread_warnings(k for k in run.kinds_unread if k not in snapshot.unlisted)
    run.warnings = [*snapshot.warnings, *proven, *said]
    run.finished_at = timezone.now()
    fields = ["status", "counts", "progress", "changes", "warnings", "kinds_unread", "finished_at"]
    run.save(update_fields=fields)
    return run


def sync_run_note(*, run: SyncRun, fallback: str | None, files_read: int | None) -> SyncRun:
    """Add to a run that succeeded why it listed everything (`fallback`, a warning) and how
    many snapshot files it read (for its summary)."""
    fields = []
    if fallback:
        run.warnings = [*run.warnings, fallback]
        fields.append("warnings")
    if files_read is not None:
        run.files_read = files_read
        fields.append("files_read")
    if fields:
        run.save(update_fields=fields)
    return run


def _apply(
    run: SyncRun, snapshot: snap.ClusterSnapshot, now: datetime
) -> tuple[dict[str, dict[str, int]], list[DriftChange], list[str]]:
    cluster = run.cluster
    unread = _unread(snapshot)
    had_good_sync = (
        SyncRun.objects.filter(cluster=cluster, status=SyncRun.Status.SUCCEEDED)
        .exclude(pk=run.pk)
        .exists()
    )
    previous = (
        gpu_config_within(previous_state(cluster), snapshot.platform_namespaces)
        if had_good_sync
        else None
    )
    nodes = with_host_facts(cluster, snapshot.nodes)
    slices_said: list[str] = []
    if RESOURCE_SLICE in unread:  # a DRA-only GPU node stays one (inventory.slices_unread)
        nodes, slices_said = _slice_facts_kept(cluster, nodes)
    nodes = carry_mig_state(previous.nodes if previous is not None else (), nodes, now)
    node_rows, node_changes = _apply_nodes(cluster, nodes, now)
    # Namespaces not read: their labels as the last sync that read them stored them.
    namespaces, said = owning_namespaces(run, snapshot.namespaces, unread)
    owners = namespace_owners(namespaces)
    pod_changes = _apply_pods(cluster, snapshot.pods, node_rows, owners, now)
    # Who held each node's exclusive GPU devices, kept past its pods (LEAK-001 from sync
    # history); the platform's pods set NVIDIA_VISIBLE_DEVICES by design: no hold of theirs.
    platform = frozenset(snapshot.platform_namespaces) - set(owners)
    # Tenants' namespaces: their pods never speak for a node's toolkit (env_holds).
    claimed = claimed_namespaces(
        namespace_labels={ns.name: ns.labels for ns in namespaces}, tenant_namespaces=owners
    )
    found = exclusive_holders(nodes, snapshot.pods, snapshot, platform, claimed)
    holdings_record(run, found, owner_slugs(owners), now, platform=platform)
    kept = (STORED_KIND,) if NAMESPACE in unread else ()
    # Owners the export names but did not read: their links as the last sync stored them.
    owners_kept, owners_said = owner_links_kept(cluster, snapshot)
    said = [*said, *owners_said, *slices_said]
    with_owners = replace(snapshot, owners=(*snapshot.owners, *owners_kept))
    object_changes = _apply_objects(cluster, with_owners, kept)
    drift: list[DriftChange] = []
    if previous is not None:
        current = ClusterState(
            nodes=tuple(nodes),
            sharing_configs=snapshot.sharing_configs,
            configmaps=snapshot.configmaps,
            workloads=snapshot.workloads,
            operator_policies=snapshot.gpu_operator_policies,
            roles=tuple(r for r in snapshot.roles if r.kind == "ClusterRole"),
            bindings=snapshot.bindings,
        )
        read = _kinds_read_before(run)
        if read is not None:  # compare only the kinds both syncs read (inventory.drift_scope)
            read &= kinds_read(snapshot.counts, unread)
            previous, current = read_in_both(previous, current, read)
        drift = detect_drift(previous, current, pool_taint_rules())
    changes = {"nodes": node_changes.as_dict(), "pods": pod_changes.as_dict(), **object_changes}
    return changes, drift, said


def _unread(snapshot: snap.ClusterSnapshot) -> list[str]:
    real = exported_from_a_real_cluster((p.namespace, p.name) for p in snapshot.pods)
    referenced = _referenced(snapshot) if real else []  # a written world: taken at its word
    return kinds_unread(
        snapshot.counts, snapshot.unlisted, real_cluster=real, referenced=referenced
    )


def _referenced(snapshot: snap.ClusterSnapshot) -> list[str]:
    """The DRA kinds and RuntimeClasses the export's own objects prove the cluster had
    (inventory.kinds_read.kinds_referenced)."""
    # Of running and pending pods (a finished pod's template claim is deleted once it is
    # done): a claim its template made is named in its status once made; a scheduled pod's
    # claims all exist and are allocated (the scheduler waits for them), even where the export
    # holds no status naming one. A pending pod's named claim may not be made yet.
    live = [p for p in snapshot.pods if p.is_active]
    made = sum(1 for p in live for e in p.resource_claims if e.template and e.claim)
    scheduled = sum(
        1 for p in live if p.node_name for e in p.resource_claims if e.claim or e.template
    )
    return kinds_referenced(
        made + scheduled,
        scheduled + sum(1 for c in snapshot.dra_claims if c.results),
        (p.runtime_class for p in live),
    )


def _slice_facts_kept(
    cluster: Cluster, nodes: list[snap.Node]
) -> tuple[list[snap.Node], list[str]]:
    """The nodes of a sync that read no ResourceSlice, each DRA-only GPU node with the GPU
    facts its stored record has from its slices, and what the run says of them."""
    names = [n.name for n in nodes]
    rows = Node.objects.filter(cluster=cluster, name__in=names).values_list("name", "data")
    stored = {name: snap.from_dict(snap.Node, data) for name, data in rows.iterator(2000)}
    nodes, kept = slice_facts_kept(nodes, stored)
    if not kept:
        return nodes, []
    shown = ", ".join(kept[:5]) + (f" and {len(kept) - 5} more" if len(kept) > 5 else "")
    said = (
        f"{len(kept)} node(s) ({shown}) hold GPUs only their ResourceSlices publish, and this "
        "sync read none: they keep the GPU count, model and driver the last sync read from "
        "their slices"
    )
    return nodes, [said]


def _kinds_read_before(run: SyncRun) -> frozenset[str] | None:
    """The kinds the cluster's last good full sync before `run` read; None when it recorded no
    counts (every kind then taken as read, as before counts were kept)."""
    last = good_full_syncs_before(run).values_list("counts", "kinds_unread").first()
    if last is None or not last[0]:
        return None
    counts, unread = last
    return kinds_read(counts, unread)


def previous_state(cluster: Cluster, node_names: Iterable[str] | None = None) -> ClusterState:
    """What the last good sync left, for drift: GPU-relevant objects, ClusterRoles and
    bindings; with `node_names`, only those nodes (a watch re-sync compares just what it
    touched)."""
    wanted = {
        "sharing_config": snap.SharingConfig,
        "configmap": snap.ConfigMap,
        "workload": snap.Workload,
        "gpu_operator_policy": snap.GpuOperatorPolicy,
        "role": snap.Role,
        "binding": snap.RoleBinding,
    }
    grouped: dict[str, list[Any]] = {kind: [] for kind in wanted}
    # A ClusterRole is stored with no namespace; namespaced Roles never grant node rights.
    rows = (
        ClusterObject.objects.filter(cluster=cluster, kind__in=wanted)
        .exclude(kind="role", namespace__gt="")
        .values_list("kind", "data")
    )
    for kind, data in rows.iterator(chunk_size=2000):
        grouped[kind].append(snap.from_dict(wanted[kind], data))
    # A node described by nvidia-smi only is no node of the API's: a sync that lists it sees
    # a node joining, not labels and taints appearing on one it had (DRIFT-003).
    node_rows = cluster.nodes.exclude(described_by=Node.DescribedBy.NVIDIA_SMI)
    if node_names is not None:
        node_rows = node_rows.filter(name__in=list(node_names))
    node_data = node_rows.values_list("data", flat=True).iterator(chunk_size=2000)
    nodes = [snap.from_dict(snap.Node, d) for d in node_data]
    return ClusterState(
        nodes=tuple(nodes),
        sharing_configs=tuple(grouped["sharing_config"]),
        configmaps=tuple(grouped["configmap"]),
        workloads=tuple(grouped["workload"]),
        operator_policies=tuple(grouped["gpu_operator_policy"]),
        roles=tuple(grouped["role"]),
        bindings=tuple(grouped["binding"]),
    )


def with_host_facts(cluster: Cluster, nodes: Iterable[snap.Node]) -> list[snap.Node]:
    facts = dict(NodeHostFacts.objects.filter(cluster=cluster).values_list("node_name", "facts"))
    return [merge_host_facts(n, facts[n.name]) if n.name in facts else n for n in nodes]


def _apply_nodes(
    cluster: Cluster, nodes: Iterable[snap.Node], now: datetime
) -> tuple[dict[str, int], Changes]:
    """Returns node name -> primary key, and what changed."""
    existing = {
        name: (pk, digest)
        for name, pk, digest in Node.objects.filter(cluster=cluster).values_list(
            "name", "pk", "data_hash"
        )
    }
    changes = nodes_write(cluster, list(nodes), existing, now)
    # Read back: COPY returns no keys, and one query for every node is cheap.
    node_ids = dict(Node.objects.filter(cluster=cluster).values_list("name", "pk"))
    return node_ids, changes


def namespace_owners(namespaces: Iterable[snap.Namespace]) -> dict[str, int]:
    """namespace -> tenant id, by the registry and the `gpuposture.io/tenant` label."""
    tenants = dict(Tenant.objects.values_list("slug", "pk"))
    slugs = resolve_namespace_owners(
        namespace_labels={ns.name: ns.labels for ns in namespaces},
        registry=dict(TenantNamespace.objects.values_list("name", "tenant__slug")),
        known_tenants=set(tenants),
    )
    return {ns: tenants[slug] for ns, slug in slugs.items()}


def _apply_pods(
    cluster: Cluster,
    pods: Iterable[snap.Pod],
    node_ids: dict[str, int],
    owners: dict[str, int],
    now: datetime,
) -> Changes:
    existing = {
        (ns, name): (pk, digest, node_id, tenant_id)
        for pk, ns, name, digest, node_id, tenant_id in Pod.objects.filter(cluster=cluster)
        .values_list("pk", "namespace", "name", "data_hash", "node_id", "tenant_id")
        .iterator(chunk_size=2000)
    }
    created, updated = pod_rows_write(
        cluster, pods, existing, node_ids, owners, now, seen=existing.pop
    )
    gone = [value[0] for value in existing.values()]
    for batch in chunks(gone):
        Pod.objects.filter(pk__in=batch).delete()
    return Changes(created, updated, len(gone))


def _apply_objects(
    cluster: Cluster, snapshot: snap.ClusterSnapshot, kept: Iterable[str] = ()
) -> dict[str, dict[str, int]]:
    """Write the snapshot's objects; the stored ones of the `kept` kinds (a kind the sync did
    not read) are left as they are, not deleted as gone."""
    stored = ClusterObject.objects.filter(cluster=cluster).exclude(kind__in=list(kept))
    existing = {
        (kind, namespace, name): (pk, digest)
        for pk, kind, namespace, name, digest in stored.values_list(
            "pk", "kind", "namespace", "name", "data_hash"
        )
    }
    return objects_write(cluster, snapshot, existing)


def record_drift(run: SyncRun, drift: list[DriftChange], now: datetime) -> None:
    DriftEvent.objects.bulk_create(
        DriftEvent(
            cluster=run.cluster,
            sync_run=run,
            kind=change.kind,
            check_id=change.check_id,
            subject_kind=change.subject_kind,
            subject_namespace=change.subject_namespace,
            subject_name=change.subject_name[:320],
            summary=change.summary[:300],
            before=change.before,
            after=change.after,
            nodes=list(change.nodes),
            detected_at=now,
        )
        for change in drift
    )


@transaction.atomic
def pod_tenants_refresh() -> int:
    """Re-resolve every pod's tenant after the tenant registry changed; returns pods changed."""
    changed = 0
    for cluster in Cluster.objects.all():
        namespaces = [
            snap.from_dict(snap.Namespace, data)
            for data in ClusterObject.objects.filter(cluster=cluster, kind="namespace").values_list(
                "data", flat=True
            )
        ]
        owners = namespace_owners(namespaces)
        pods = list(Pod.objects.filter(cluster=cluster).only("pk", "namespace", "tenant_id"))
        stale = [p for p in pods if p.tenant_id != owners.get(p.namespace)]
        for pod in stale:
            pod.tenant_id = owners.get(pod.namespace)
        Pod.objects.bulk_update(stale, ["tenant"], batch_size=BATCH)
        changed += len(stale)
    return changed
