"""Apply a ClusterSnapshot to the database atomically, recording a SyncRun (STYLE rule 5).

The run row is written outside the apply transaction, so a failed apply rolls back every
inventory change while the failure itself stays recorded. Rows are compared by a hash of
their normalised data and only changed rows are written, so a re-sync costs what changed.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from audit.services import CREATE, Actor, audit_record
from inventory import snapshot as snap
from inventory.audit_state import cluster_state
from inventory.bulk import db_datetime, rows_insert, rows_update
from inventory.drift import ClusterState, DriftChange, detect_drift, gpu_config_within
from inventory.hostfacts import merge_host_facts
from inventory.mig_state import carry_mig_state
from inventory.models import Cluster, ClusterObject, DriftEvent, Node, NodeHostFacts, Pod, SyncRun
from tenants.mapping import resolve_namespace_owners
from tenants.models import Tenant, TenantNamespace

logger = logging.getLogger(__name__)

NODE_FIELDS = (
    "is_gpu_node",
    "gpu_model",
    "gpu_count",
    "driver_version",
    "container_toolkit_version",
    "device_plugin_version",
    "gpu_operator_version",
    "firmware_version",
    "sharing_strategy",
    "time_slicing_replicas",
    "mig_strategy",
    "mig_config",
    "taints",
    "labels",
    "data",
    "data_hash",
    "changed_at",
)
POD_FIELDS = (
    "node",
    "tenant",
    "phase",
    "service_account",
    "gpu_resources",
    "data",
    "data_hash",
    "changed_at",
)
# The same, as columns of the raw rows inventory.bulk writes (JSON columns as JSON text).
NODE_COLUMNS = NODE_FIELDS
POD_COLUMNS = ("node_id", "tenant_id", *POD_FIELDS[2:])
BATCH = 500

# snapshot attribute -> (ClusterObject kind, dataclass, how to name one record)
OBJECT_KINDS: dict[str, tuple[str, type, Callable[[Any], tuple[str, str]]]] = {
    "namespaces": ("namespace", snap.Namespace, lambda o: ("", o.name)),
    "quotas": ("quota", snap.ResourceQuota, lambda o: (o.namespace, o.name)),
    "configmaps": ("configmap", snap.ConfigMap, lambda o: (o.namespace, o.name)),
    "sharing_configs": (
        "sharing_config",
        snap.SharingConfig,
        lambda o: (o.namespace, f"{o.configmap}/{o.key}"),
    ),
    "workloads": ("workload", snap.Workload, lambda o: (o.namespace, f"{o.kind}/{o.name}")),
    "services": ("service", snap.Service, lambda o: (o.namespace, o.name)),
    "roles": ("role", snap.Role, lambda o: (o.namespace or "", f"{o.kind}/{o.name}")),
    "bindings": ("binding", snap.RoleBinding, lambda o: (o.namespace or "", f"{o.kind}/{o.name}")),
    "ingresses": ("ingress", snap.Ingress, lambda o: (o.namespace, o.name)),
    "network_policies": ("network_policy", snap.NetworkPolicy, lambda o: (o.namespace, o.name)),
    "gpu_operator_policies": (
        "gpu_operator_policy",
        snap.GpuOperatorPolicy,
        lambda o: ("", o.name),
    ),
    "owners": ("owner", snap.OwnerLink, lambda o: (o.namespace, f"{o.kind}/{o.name}")),
    "env_configmaps": ("env_configmap", snap.EnvConfigMap, lambda o: (o.namespace, o.name)),
    "dra_claims": ("dra_claim", snap.DraClaim, lambda o: (o.namespace, o.name)),
    "dra_claim_templates": (
        "dra_claim_template",
        snap.DraClaimTemplate,
        lambda o: (o.namespace, o.name),
    ),
    "dra_device_classes": ("dra_device_class", snap.DraDeviceClass, lambda o: ("", o.name)),
    "dra_slices": ("dra_slice", snap.DraSlice, lambda o: ("", o.name)),
    "admission_policies": (
        "admission_policy",
        snap.AdmissionPolicy,
        lambda o: (o.namespace, f"{o.kind}/{o.name}"),
    ),
    "admission_reads": ("admission_read", snap.AdmissionRead, lambda o: ("", o.resource)),
}


class SyncError(Exception):
    """A sync could not complete; the message is stored on the failed SyncRun."""

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.retryable = retryable


@dataclass
class Changes:
    created: int = 0
    updated: int = 0
    deleted: int = 0

    def as_dict(self) -> dict[str, int]:
        return {"created": self.created, "updated": self.updated, "deleted": self.deleted}


def data_hash(data: dict[str, Any]) -> str:
    return text_hash(json.dumps(data, sort_keys=True))


def text_hash(canonical: str) -> str:
    """data_hash of the dict whose canonical JSON (snap.to_json) this is."""
    return hashlib.sha1(canonical.encode(), usedforsecurity=False).hexdigest()


def chunks(items: list[Any], size: int = BATCH) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


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
            changes, drift = _apply(run, snapshot, now)
            record_drift(run, drift, now)
    except Exception as exc:  # noqa: BLE001 - every failure must be recorded, then re-raised
        sync_run_fail(run=run, error=f"applying the snapshot failed: {exc}")
        raise SyncError(str(exc)) from exc
    run.status = SyncRun.Status.SUCCEEDED
    run.counts = dict(snapshot.counts)
    run.progress = dict(snapshot.counts)
    run.changes = {**changes, "drift_events": len(drift)}
    run.warnings = list(snapshot.warnings)
    run.finished_at = timezone.now()
    run.save(update_fields=["status", "counts", "progress", "changes", "warnings", "finished_at"])
    return run


def _apply(
    run: SyncRun, snapshot: snap.ClusterSnapshot, now: datetime
) -> tuple[dict[str, dict[str, int]], list[DriftChange]]:
    cluster = run.cluster
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
    nodes = carry_mig_state(previous.nodes if previous is not None else (), nodes, now)
    node_rows, node_changes = _apply_nodes(cluster, nodes, now)
    owners = namespace_owners(snapshot.namespaces)
    pod_changes = _apply_pods(cluster, snapshot.pods, node_rows, owners, now)
    object_changes = _apply_objects(cluster, snapshot)
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
        drift = detect_drift(previous, current)
    return {"nodes": node_changes.as_dict(), "pods": pod_changes.as_dict(), **object_changes}, drift


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
    node_rows = cluster.nodes.all()
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


def node_values(node: snap.Node) -> dict[str, Any]:
    """The Node model's field values for a snapshot node."""
    data = snap.to_dict(node)
    return {
        **_node_facts(node),
        "taints": data["taints"],
        "labels": dict(node.labels),
        "data": data,
        "data_hash": text_hash(snap.to_json(node)),
    }


def _node_facts(node: snap.Node) -> dict[str, Any]:
    return {
        "is_gpu_node": node.is_gpu_node,
        "gpu_model": node.gpu_model or "",
        "gpu_count": node.gpu_count,
        "driver_version": node.driver_version or "",
        "container_toolkit_version": node.container_toolkit_version or "",
        "device_plugin_version": node.device_plugin_version or "",
        "gpu_operator_version": node.gpu_operator_version or "",
        "firmware_version": node.firmware_version or "",
        "sharing_strategy": node.sharing_strategy,
        "time_slicing_replicas": node.time_slicing_replicas,
        "mig_strategy": node.mig_strategy or "",
        "mig_config": node.mig_config or "",
    }


def node_row(node: snap.Node, canonical: str, digest: str, stamp: Any) -> tuple[Any, ...]:
    """node_values() as a raw row in NODE_COLUMNS order, JSON columns as JSON text."""
    taints = json.dumps(snap.to_dict(node)["taints"])
    extra = (taints, json.dumps(node.labels), canonical, digest, stamp)
    return (*_node_facts(node).values(), *extra)


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


def nodes_write(
    cluster: Cluster, nodes: list[snap.Node], existing: dict[str, tuple[int, str]], now: datetime
) -> Changes:
    """Insert the new nodes, update the changed ones, delete those of `existing` (name ->
    (pk, digest)) that are not among `nodes`."""
    stamp = db_datetime(now)
    to_create, to_update = [], []
    for node in nodes:
        canonical = snap.to_json(node)
        digest, before = text_hash(canonical), existing.get(node.name)
        if before is None:
            to_create.append((cluster.pk, node.name, *node_row(node, canonical, digest, stamp)))
        elif before[1] != digest:
            to_update.append((before[0], *node_row(node, canonical, digest, stamp)))
    rows_insert(Node, ("cluster_id", "name", *NODE_COLUMNS), to_create, now)
    rows_update(Node, NODE_COLUMNS, to_update)
    names = {node.name for node in nodes}
    gone = [pk for name, (pk, _digest) in existing.items() if name not in names]
    for batch in chunks(gone):
        Node.objects.filter(pk__in=batch).delete()
    return Changes(len(to_create), len(to_update), len(gone))


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


def pod_rows_write(
    cluster: Cluster,
    pods: Iterable[snap.Pod],
    existing: dict[tuple[str, str], tuple],
    node_ids: dict[str, int],
    owners: dict[str, int],
    now: datetime,
    seen: Callable[..., Any] | None = None,
) -> tuple[int, int]:
    """Insert the new pods and update the changed ones; `existing` maps (namespace, name) to
    (pk, digest, node_id, tenant_id, ...). `seen` (the full sync's dict.pop) takes each pod
    read out of `existing`, so what is left there is gone. Returns (created, updated)."""
    look = seen or (lambda key, default: existing.get(key, default))
    stamp = db_datetime(now)
    to_create, to_update = [], []
    for pod in pods:
        # One canonical JSON text per pod: hashed to compare, and stored as is when it changed.
        canonical = snap.to_json(pod)
        digest = text_hash(canonical)
        node_id, tenant_id = node_ids.get(pod.node_name or ""), owners.get(pod.namespace)
        before = look((pod.namespace, pod.name), None)
        if before is not None and before[1:4] == (digest, node_id, tenant_id):
            continue
        row = (
            node_id,
            tenant_id,
            pod.phase,
            pod.service_account,
            json.dumps(pod.gpu_resources),
            canonical,
            digest,
            stamp,
        )
        if before is None:
            to_create.append((cluster.pk, pod.namespace, pod.name, *row))
        else:
            to_update.append((before[0], *row))
    rows_insert(Pod, ("cluster_id", "namespace", "name", *POD_COLUMNS), to_create, now)
    rows_update(Pod, POD_COLUMNS, to_update)
    return len(to_create), len(to_update)


def _apply_objects(cluster: Cluster, snapshot: snap.ClusterSnapshot) -> dict[str, dict[str, int]]:
    existing = {
        (kind, namespace, name): (pk, digest)
        for pk, kind, namespace, name, digest in ClusterObject.objects.filter(
            cluster=cluster
        ).values_list("pk", "kind", "namespace", "name", "data_hash")
    }
    result: dict[str, Changes] = {}
    to_create, to_update = [], []
    for attribute, (kind, _cls, naming) in OBJECT_KINDS.items():
        changes = result.setdefault(kind, Changes())
        for obj in getattr(snapshot, attribute):
            namespace, name = naming(obj)
            canonical = snap.to_json(obj)
            digest = text_hash(canonical)
            before = existing.pop((kind, namespace, name), None)
            if before is None:
                to_create.append((cluster.pk, kind, namespace, name, canonical, digest))
                changes.created += 1
            elif before[1] != digest:
                to_update.append((before[0], canonical, digest))
                changes.updated += 1
    for kind, _namespace, _name in existing:
        result.setdefault(kind, Changes()).deleted += 1
    columns = ("cluster_id", "kind", "namespace", "name", "data", "data_hash")
    rows_insert(ClusterObject, columns, to_create, timezone.now())
    rows_update(ClusterObject, ("data", "data_hash"), to_update)
    for batch in chunks([value[0] for value in existing.values()]):
        ClusterObject.objects.filter(pk__in=batch).delete()
    return {kind: c.as_dict() for kind, c in result.items()}


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
