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

from inventory import snapshot as snap
from inventory.drift import ClusterState, DriftChange, detect_drift
from inventory.hostfacts import merge_host_facts
from inventory.models import Cluster, ClusterObject, DriftEvent, Node, NodeHostFacts, Pod, SyncRun
from tenants.mapping import resolve_namespace_owners
from tenants.models import Tenant, TenantNamespace

logger = logging.getLogger(__name__)

NODE_FIELDS = (
    "is_gpu_node", "gpu_model", "gpu_count", "driver_version", "container_toolkit_version",
    "device_plugin_version", "gpu_operator_version", "firmware_version", "sharing_strategy",
    "time_slicing_replicas", "mig_strategy", "mig_config", "taints", "labels", "data",
    "data_hash", "changed_at",
)  # fmt: skip
POD_FIELDS = (
    "node", "tenant", "phase", "service_account", "gpu_resources", "data", "data_hash",
    "changed_at",
)  # fmt: skip
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
    return hashlib.sha1(
        json.dumps(data, sort_keys=True).encode(), usedforsecurity=False
    ).hexdigest()


def chunks(items: list[Any], size: int = BATCH) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def cluster_get_or_create(*, name: str) -> Cluster:
    cluster, _ = Cluster.objects.get_or_create(name=name)
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
        with transaction.atomic():
            changes, drift = _apply(run, snapshot, now)
            _record_drift(run, drift, now)
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
    previous = _previous_state(cluster) if had_good_sync else None
    nodes = _with_host_facts(cluster, snapshot.nodes)
    node_rows, node_changes = _apply_nodes(cluster, nodes, now)
    owners = _namespace_owners(snapshot.namespaces)
    pod_changes = _apply_pods(cluster, snapshot.pods, node_rows, owners, now)
    object_changes = _apply_objects(cluster, snapshot)
    drift: list[DriftChange] = []
    if previous is not None:
        current = ClusterState(
            nodes=tuple(nodes), sharing_configs=snapshot.sharing_configs,
            configmaps=snapshot.configmaps, workloads=snapshot.workloads,
        )  # fmt: skip
        drift = detect_drift(previous, current)
    return {"nodes": node_changes.as_dict(), "pods": pod_changes.as_dict(), **object_changes}, drift


def _previous_state(cluster: Cluster) -> ClusterState:
    """What the last good sync left, for drift: GPU-relevant objects only (small)."""
    wanted = {
        "sharing_config": snap.SharingConfig,
        "configmap": snap.ConfigMap,
        "workload": snap.Workload,
    }
    grouped: dict[str, list[Any]] = {kind: [] for kind in wanted}
    rows = ClusterObject.objects.filter(cluster=cluster, kind__in=wanted).values_list(
        "kind", "data"
    )
    for kind, data in rows:
        grouped[kind].append(snap.from_dict(wanted[kind], data))
    nodes = [snap.from_dict(snap.Node, d) for d in cluster.nodes.values_list("data", flat=True)]
    return ClusterState(
        nodes=tuple(nodes), sharing_configs=tuple(grouped["sharing_config"]),
        configmaps=tuple(grouped["configmap"]), workloads=tuple(grouped["workload"]),
    )  # fmt: skip


def _with_host_facts(cluster: Cluster, nodes: Iterable[snap.Node]) -> list[snap.Node]:
    facts = dict(NodeHostFacts.objects.filter(cluster=cluster).values_list("node_name", "facts"))
    return [merge_host_facts(n, facts[n.name]) if n.name in facts else n for n in nodes]


def node_values(node: snap.Node) -> dict[str, Any]:
    data = snap.to_dict(node)
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
        "taints": data["taints"],
        "labels": dict(node.labels),
        "data": data,
        "data_hash": data_hash(data),
    }


def _apply_nodes(
    cluster: Cluster, nodes: Iterable[snap.Node], now: datetime
) -> tuple[dict[str, int], Changes]:
    """Returns node name -> primary key, and what changed."""
    existing = dict(Node.objects.filter(cluster=cluster).values_list("name", "pk"))
    hashes = dict(Node.objects.filter(cluster=cluster).values_list("name", "data_hash"))
    changes, to_create, to_update = Changes(), [], []
    for node in nodes:
        values = node_values(node)
        if node.name not in existing:
            to_create.append(Node(cluster=cluster, name=node.name, changed_at=now, **values))
        elif hashes[node.name] != values["data_hash"]:
            to_update.append(Node(pk=existing[node.name], changed_at=now, **values))
    seen = {n.name for n in nodes}
    gone = [pk for name, pk in existing.items() if name not in seen]
    created = Node.objects.bulk_create(to_create, batch_size=BATCH)
    Node.objects.bulk_update(to_update, NODE_FIELDS, batch_size=BATCH)
    for batch in chunks(gone):
        Node.objects.filter(pk__in=batch).delete()
    changes.created, changes.updated, changes.deleted = len(to_create), len(to_update), len(gone)
    node_ids = {name: pk for name, pk in existing.items() if name in seen}
    node_ids.update({row.name: row.pk for row in created})
    return node_ids, changes


def _namespace_owners(namespaces: Iterable[snap.Namespace]) -> dict[str, int]:
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
    changes, to_create, to_update = Changes(), [], []
    for pod in pods:
        data = snap.to_dict(pod)
        digest = data_hash(data)
        node_id, tenant_id = node_ids.get(pod.node_name or ""), owners.get(pod.namespace)
        before = existing.pop((pod.namespace, pod.name), None)
        if before is not None and before[1:] == (digest, node_id, tenant_id):
            continue
        row = Pod(
            pk=before[0] if before else None, cluster=cluster, namespace=pod.namespace,
            name=pod.name, node_id=node_id, tenant_id=tenant_id, phase=pod.phase,
            service_account=pod.service_account, gpu_resources=pod.gpu_resources, data=data,
            data_hash=digest, changed_at=now,
        )  # fmt: skip
        (to_update if before else to_create).append(row)
    Pod.objects.bulk_create(to_create, batch_size=BATCH)
    Pod.objects.bulk_update(to_update, POD_FIELDS, batch_size=BATCH)
    gone = [value[0] for value in existing.values()]
    for batch in chunks(gone):
        Pod.objects.filter(pk__in=batch).delete()
    changes.created, changes.updated, changes.deleted = len(to_create), len(to_update), len(gone)
    return changes


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
            data = snap.to_dict(obj)
            digest = data_hash(data)
            before = existing.pop((kind, namespace, name), None)
            if before is None:
                to_create.append(ClusterObject(
                    cluster=cluster, kind=kind, namespace=namespace, name=name, data=data,
                    data_hash=digest,
                ))  # fmt: skip
                changes.created += 1
            elif before[1] != digest:
                to_update.append(ClusterObject(pk=before[0], data=data, data_hash=digest))
                changes.updated += 1
    for kind, _namespace, _name in existing:
        result.setdefault(kind, Changes()).deleted += 1
    ClusterObject.objects.bulk_create(to_create, batch_size=BATCH)
    ClusterObject.objects.bulk_update(to_update, ["data", "data_hash"], batch_size=BATCH)
    for batch in chunks([value[0] for value in existing.values()]):
        ClusterObject.objects.filter(pk__in=batch).delete()
    return {kind: c.as_dict() for kind, c in result.items()}


def _record_drift(run: SyncRun, drift: list[DriftChange], now: datetime) -> None:
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
        )  # fmt: skip
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
        owners = _namespace_owners(namespaces)
        pods = list(Pod.objects.filter(cluster=cluster).only("pk", "namespace", "tenant_id"))
        stale = [p for p in pods if p.tenant_id != owners.get(p.namespace)]
        for pod in stale:
            pod.tenant_id = owners.get(pod.namespace)
        Pod.objects.bulk_update(stale, ["tenant"], batch_size=BATCH)
        changed += len(stale)
    return changed
