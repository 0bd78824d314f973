"""How a snapshot becomes rows: the Node, Pod and ClusterObject values, their hashes, and the
writers that insert what is new, update what changed and delete what is gone (inventory.bulk
does the raw writes). Shared by the full sync (inventory/sync.py) and the watch re-sync
(inventory/sync_delta.py); the callers read what is stored and own the transaction.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.utils import timezone

from inventory import snapshot as snap
from inventory.bulk import db_datetime, rows_insert, rows_update
from inventory.models import Cluster, ClusterObject, Node, Pod

HOST_ONLY = Node.DescribedBy.NVIDIA_SMI

NODE_FIELDS = (
    "is_gpu_node",
    "is_accelerator_node",
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
    "described_by",
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
    "ingresses": (
        "ingress",
        snap.Ingress,
        # A Gateway API route may share a name with an Ingress: its kind prefixes it.
        lambda o: (o.namespace, o.name if o.kind == "Ingress" else f"{o.kind}/{o.name}"),
    ),
    "network_policies": (
        "network_policy",
        snap.NetworkPolicy,
        # A CNI's own policy may share a name with a Kubernetes one: its kind prefixes it.
        lambda o: (o.namespace, f"{o.engine}/{o.name}" if o.engine else o.name),
    ),
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
    "service_accounts": (
        "service_account",
        snap.ServiceAccount,
        lambda o: (o.namespace, o.name),
    ),
}


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
        "is_accelerator_node": node.is_accelerator_node,
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
        "described_by": node.described_by,
    }


def node_row(node: snap.Node, canonical: str, digest: str, stamp: Any) -> tuple[Any, ...]:
    """node_values() as a raw row in NODE_COLUMNS order, JSON columns as JSON text."""
    taints = json.dumps(snap.to_dict(node)["taints"])
    extra = (taints, json.dumps(node.labels), canonical, digest, stamp)
    return (*_node_facts(node).values(), *extra)


def nodes_write(
    cluster: Cluster, nodes: list[snap.Node], existing: dict[str, tuple[int, str]], now: datetime
) -> Changes:
    """Insert the new nodes, update the changed ones, delete those of `existing` (name ->
    (pk, digest)) that are not among `nodes`, except the nodes described by nvidia-smi only:
    the API never listed them, so its not listing them now is no sign they are gone."""
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
    deleted = 0
    for batch in chunks(gone):
        rows = Node.objects.filter(pk__in=batch).exclude(described_by=HOST_ONLY)
        deleted += rows.delete()[1].get(Node._meta.label, 0)
    return Changes(len(to_create), len(to_update), deleted)


def stored_holding(pod: snap.Pod) -> dict[str, int]:
    """What the pod holds, as its row's `gpu_resources` (docs/api.md): any vendor's
    accelerators. A pod bound to no node was allocated nothing by a kubelet's device manager
    (it asks, it does not hold), and a finished one (Succeeded, Failed: not is_active, as the
    checks judge it) had its devices released by the kubelet when its containers ended, though
    it stays bound to its node and its spec still asks."""
    return pod.held_resources if pod.node_name and pod.is_active else {}


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
            json.dumps(stored_holding(pod)),
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


def objects_write(
    cluster: Cluster,
    snapshot: snap.ClusterSnapshot,
    existing: dict[tuple[str, str, str], tuple[int, str]],
) -> dict[str, dict[str, int]]:
    """Insert the snapshot's new objects, update the changed ones, delete those of `existing`
    ((kind, namespace, name) -> (pk, digest)) it no longer holds; `existing` is consumed.
    Returns the changes per kind."""
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
