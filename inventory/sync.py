"""Apply a ClusterSnapshot to the database atomically, recording a SyncRun (STYLE rule 5).

The run row is written outside the apply transaction, so a failed apply rolls back every
inventory change while the failure itself stays recorded.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone

from inventory import snapshot as snap
from inventory.models import Cluster, ClusterObject, Node, Pod, SyncRun
from tenants.mapping import resolve_namespace_owners
from tenants.models import Tenant, TenantNamespace

logger = logging.getLogger(__name__)

NODE_FIELDS = (
    "is_gpu_node", "gpu_model", "gpu_count", "driver_version", "container_toolkit_version",
    "device_plugin_version", "gpu_operator_version", "firmware_version", "sharing_strategy",
    "time_slicing_replicas", "mig_strategy", "mig_config", "taints", "labels", "data",
)  # fmt: skip
POD_FIELDS = ("node", "tenant", "phase", "service_account", "gpu_resources", "data")

# snapshot attribute -> (ClusterObject kind, how to name one record)
OBJECT_KINDS: dict[str, tuple[str, Callable[[Any], tuple[str, str]]]] = {
    "namespaces": ("namespace", lambda o: ("", o.name)),
    "quotas": ("quota", lambda o: (o.namespace, o.name)),
    "configmaps": ("configmap", lambda o: (o.namespace, o.name)),
    "sharing_configs": ("sharing_config", lambda o: (o.namespace, f"{o.configmap}/{o.key}")),
    "workloads": ("workload", lambda o: (o.namespace, f"{o.kind}/{o.name}")),
    "services": ("service", lambda o: (o.namespace, o.name)),
    "roles": ("role", lambda o: (o.namespace or "", f"{o.kind}/{o.name}")),
    "bindings": ("binding", lambda o: (o.namespace or "", f"{o.kind}/{o.name}")),
}


class SyncError(Exception):
    """A sync could not complete; the message is stored on the failed SyncRun."""


@dataclass
class Changes:
    created: int = 0
    updated: int = 0
    deleted: int = 0

    def as_dict(self) -> dict[str, int]:
        return {"created": self.created, "updated": self.updated, "deleted": self.deleted}


def cluster_get_or_create(*, name: str) -> Cluster:
    cluster, _ = Cluster.objects.get_or_create(name=name)
    return cluster


def sync_run_start(*, cluster: Cluster, source: str) -> SyncRun:
    return SyncRun.objects.create(cluster=cluster, source=source[:300])


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
    try:
        with transaction.atomic():
            changes = _apply(run.cluster, snapshot)
    except Exception as exc:  # noqa: BLE001 - every failure must be recorded, then re-raised
        sync_run_fail(run=run, error=f"applying the snapshot failed: {exc}")
        raise SyncError(str(exc)) from exc
    run.status = SyncRun.Status.SUCCEEDED
    run.counts = dict(snapshot.counts)
    run.changes = changes
    run.warnings = list(snapshot.warnings)
    run.finished_at = timezone.now()
    run.save(update_fields=["status", "counts", "changes", "warnings", "finished_at"])
    return run


def _apply(cluster: Cluster, snapshot: snap.ClusterSnapshot) -> dict[str, dict[str, int]]:
    now = timezone.now()
    nodes, node_changes = _apply_nodes(cluster, snapshot.nodes, now)
    owners = _namespace_owners(snapshot.namespaces)
    pod_changes = _apply_pods(cluster, snapshot.pods, nodes, owners, now)
    object_changes = _apply_objects(cluster, snapshot)
    return {"nodes": node_changes.as_dict(), "pods": pod_changes.as_dict(), **object_changes}


def _node_values(node: snap.Node) -> dict[str, Any]:
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
    }


def _apply_nodes(
    cluster: Cluster, nodes: Iterable[snap.Node], now: Any
) -> tuple[dict[str, Node], Changes]:
    existing = {n.name: n for n in Node.objects.filter(cluster=cluster)}
    changes, to_create, to_update, seen = Changes(), [], [], {}
    for node in nodes:
        values = _node_values(node)
        row = existing.get(node.name)
        if row is None:
            row = Node(cluster=cluster, name=node.name, last_seen=now, **values)
            to_create.append(row)
        else:
            if any(getattr(row, k) != v for k, v in values.items()):
                to_update.append(row)
            for key, value in values.items():
                setattr(row, key, value)
            row.last_seen = now
        seen[node.name] = row
    Node.objects.bulk_create(to_create, batch_size=500)
    # last_seen moves on every sync, so every kept node is written; `changes` counts real edits.
    Node.objects.bulk_update(
        [r for n, r in seen.items() if n in existing], [*NODE_FIELDS, "last_seen"], batch_size=500
    )
    gone = [pk for name, row in existing.items() if name not in seen for pk in [row.pk]]
    Node.objects.filter(pk__in=gone).delete()
    changes.created, changes.updated, changes.deleted = len(to_create), len(to_update), len(gone)
    return seen, changes


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
    nodes: dict[str, Node],
    owners: dict[str, int],
    now: Any,
) -> Changes:
    existing = {(p.namespace, p.name): p for p in Pod.objects.filter(cluster=cluster)}
    changes, to_create, kept = Changes(), [], []
    for pod in pods:
        values = {
            "node": nodes.get(pod.node_name or ""),
            "tenant_id": owners.get(pod.namespace),
            "phase": pod.phase,
            "service_account": pod.service_account,
            "gpu_resources": pod.gpu_resources,
            "data": snap.to_dict(pod),
        }
        row = existing.pop((pod.namespace, pod.name), None)
        if row is None:
            to_create.append(
                Pod(
                    cluster=cluster, namespace=pod.namespace, name=pod.name, last_seen=now, **values
                )
            )
            continue
        compare = {**values, "node": values["node"].pk if values["node"] else None}
        current = {**{k: getattr(row, k) for k in values if k != "node"}, "node": row.node_id}
        if current != compare:
            changes.updated += 1
        for key, value in values.items():
            setattr(row, key, value)
        row.last_seen = now
        kept.append(row)
    Pod.objects.bulk_create(to_create, batch_size=500)
    Pod.objects.bulk_update(kept, [*POD_FIELDS, "last_seen"], batch_size=500)
    Pod.objects.filter(pk__in=[row.pk for row in existing.values()]).delete()
    changes.created, changes.deleted = len(to_create), len(existing)
    return changes


def _apply_objects(cluster: Cluster, snapshot: snap.ClusterSnapshot) -> dict[str, dict[str, int]]:
    existing = {
        (o.kind, o.namespace, o.name): o for o in ClusterObject.objects.filter(cluster=cluster)
    }
    result: dict[str, Changes] = {}
    to_create, to_update = [], []
    for attribute, (kind, naming) in OBJECT_KINDS.items():
        changes = result.setdefault(kind, Changes())
        for obj in getattr(snapshot, attribute):
            namespace, name = naming(obj)
            data = snap.to_dict(obj)
            row = existing.pop((kind, namespace, name), None)
            if row is None:
                to_create.append(
                    ClusterObject(
                        cluster=cluster, kind=kind, namespace=namespace, name=name, data=data
                    )
                )
                changes.created += 1
            elif row.data != data:
                row.data = data
                to_update.append(row)
                changes.updated += 1
    for (kind, _, _), _row in existing.items():
        result.setdefault(kind, Changes()).deleted += 1
    ClusterObject.objects.bulk_create(to_create, batch_size=500)
    ClusterObject.objects.bulk_update(to_update, ["data"], batch_size=500)
    ClusterObject.objects.filter(pk__in=[row.pk for row in existing.values()]).delete()
    return {kind: c.as_dict() for kind, c in result.items()}


@transaction.atomic
def pod_tenants_refresh() -> int:
    """Re-resolve every pod's tenant after the tenant registry changed; returns pods changed."""
    changed = 0
    for cluster in Cluster.objects.all():
        namespaces = [
            snap.from_dict(snap.Namespace, o.data)
            for o in ClusterObject.objects.filter(cluster=cluster, kind="namespace")
        ]
        owners = _namespace_owners(namespaces)
        pods = list(Pod.objects.filter(cluster=cluster).only("pk", "namespace", "tenant_id"))
        stale = [p for p in pods if p.tenant_id != owners.get(p.namespace)]
        for pod in stale:
            pod.tenant_id = owners.get(pod.namespace)
        Pod.objects.bulk_update(stale, ["tenant"], batch_size=500)
        changed += len(stale)
    return changed
