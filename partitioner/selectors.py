"""Reads for the MIG partitioner: the trust classes of the tenants a user may see, the
MIG-capable nodes a user may see, and what a node's mig-parted config gives its GPUs."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Q, QuerySet, TextField, Value
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Coalesce, Lower, Trim

from inventory.mig_profiles import MODELS
from inventory.models import ClusterObject, Node
from inventory.sources.cloud_labels import gke_partition_size
from inventory.sources.configs import MIG_PARTED
from inventory.sources.gpu_operator import DEFAULT_MIG_PARTED_CONFIGMAP
from inventory.sources.node_kinds import (
    SANDBOX_SHARING,
    WORKLOAD,
    sandbox_default,
    sandbox_workload,
)
from partitioner.config import ConfigSource, NodeLayout, node_layout, partition_layout
from partitioner.tenancy import ClassRules
from tenants.models import Tenant

User = AbstractBaseUser | AnonymousUser
MAX_NODES = 500  # the "load from node" list; more than this is not a list anyone scrolls
_FAMILIES = sorted({key.split("-")[0] for key in MODELS})  # "A100", "B200", ...
_VM_WORKLOADS = tuple(SANDBOX_SHARING)  # vm-passthrough, vm-vgpu


def mig_tenant_classes(*, user: User) -> dict[str, ClassRules]:
    """Tenant slug -> its trust class, for the tenants the user may see. A tenant the user may
    not see is judged as unknown, so its class is never revealed through a warning."""
    rows = Tenant.objects.visible_to(user).values_list(
        "slug",
        "trust_class__slug",
        "trust_class__allowed_modes",
        "trust_class__same_class_only_modes",
    )
    return {
        slug: ClassRules(cls, tuple(allowed or ()), tuple(same_only or ()))
        for slug, cls, allowed, same_only in rows
    }


def mig_tenant_slugs(*, user: User) -> list[str]:
    return list(Tenant.objects.visible_to(user).order_by("slug").values_list("slug", flat=True))


def mig_nodes(*, user: User) -> QuerySet[Node]:
    """Nodes the user may see that have a MIG config label or a GPU model of our table, but
    not those whose GPUs go to VMs (vm_workload): nothing applies a MIG config there."""
    capable = Q(mig_config__gt="")
    for family in _FAMILIES:
        capable |= Q(gpu_model__icontains=family)
    # The workload label as inventory.sources.node_kinds.sandbox_workload reads it; an
    # unlabelled node takes its cluster's ClusterPolicy default.
    # Coalesced: NOT (NULL IN ...) is NULL in SQL, which would drop every unlabelled node.
    workload = Coalesce(
        Lower(Trim(KeyTextTransform(WORKLOAD, "labels"))), Value(""), output_field=TextField()
    )
    return (
        Node.objects.visible_to(user)
        .filter(capable)
        .alias(workload=workload)
        .exclude(workload__in=_VM_WORKLOADS)
        .exclude(Q(cluster_id__in=_vm_default_clusters()) & ~Q(labels__has_key=WORKLOAD))
        .select_related("cluster")
        .only("name", "cluster__name", "gpu_model", "mig_config")
        .order_by("cluster__name", "name")[:MAX_NODES]
    )


@dataclass(frozen=True)
class NodeLookup:
    """A node the user asked for (None when absent or not visible) and its layout."""

    node: Node | None
    layout: NodeLayout | None
    error: str | None = None


def mig_node_layout(*, user: User, cluster: str, node: str, device: int = 0) -> NodeLookup:
    """The layout the node's `nvidia.com/mig.config` names, read from the mig-parted config of
    its cluster. A node the user may not see is reported exactly like a missing one."""
    found = (
        Node.objects.visible_to(user)
        .select_related("cluster")
        .filter(cluster__name=cluster, name=node)
        .first()
    )
    if found is None:
        return NodeLookup(None, None, f"no node {node!r} in cluster {cluster!r} that you can see")
    if vm := vm_workload(found):
        error = (
            f"the node gives its GPUs to VMs (nvidia.com/gpu.workload.config={vm}): the GPU "
            "Operator runs no MIG Manager there, so nvidia.com/mig.config is applied by nothing "
            "and this node cannot be partitioned here"
        )
        return NodeLookup(found, NodeLayout(found.mig_config, error=error))
    size = gke_partition_size(found.labels if isinstance(found.labels, dict) else {})
    if size:  # GKE partitions the node itself: no mig-parted config is involved
        return NodeLookup(found, partition_layout(gpu_model=found.gpu_model, size=size))
    objects = ClusterObject.objects.filter(cluster_id=found.cluster_id).filter(
        Q(kind=ClusterObject.Kind.CONFIGMAP, data__purpose=MIG_PARTED)
        | Q(kind=ClusterObject.Kind.GPU_OPERATOR_POLICY)
    )
    sources: list[ConfigSource] = []
    configmaps: list[str] = []
    for obj in objects.order_by("kind", "namespace", "name"):
        data: dict[str, Any] = obj.data if isinstance(obj.data, dict) else {}
        if obj.kind == ClusterObject.Kind.GPU_OPERATOR_POLICY:
            configmaps.append(_policy_configmap(data))
            continue
        contents = data.get("data")
        sources.append(
            ConfigSource(obj.namespace, obj.name, contents if isinstance(contents, dict) else None)
        )
    layout = node_layout(
        gpu_model=found.gpu_model,
        mig_config=found.mig_config,
        configmap=configmaps[0] if configmaps else DEFAULT_MIG_PARTED_CONFIGMAP,
        sources=sources,
        device=device,
        gpu_count=_driver_gpus(found),
    )
    notes = list(layout.notes)
    if len(set(configmaps)) > 1:
        notes.insert(0, f"several ClusterPolicies name MIG configs; using {configmaps[0]}")
    state = (found.data or {}).get("mig_config_state") if isinstance(found.data, dict) else None
    if state and state != "success":
        notes.append(
            f"nvidia.com/mig.config.state is {state!r}: the GPUs may not have this layout yet"
        )
    return NodeLookup(found, replace(layout, notes=tuple(notes)))


def vm_workload(node: Node) -> str | None:
    """`vm-passthrough` / `vm-vgpu` where the GPU Operator gives the node's GPUs to VMs (its
    workload label, else its cluster's ClusterPolicy default): the Operator deploys no MIG
    Manager there (the VFIO manager, or the vGPU Manager and vGPU Device Manager instead)."""
    labels = node.labels if isinstance(node.labels, dict) else {}
    return sandbox_workload(labels, _policy_defaults(node.cluster_id).get(node.cluster_id, ""))


def _vm_default_clusters() -> list[int]:
    """Clusters whose ClusterPolicy gives unlabelled GPU nodes to VMs by default."""
    return [c for c, default in _policy_defaults().items() if default in _VM_WORKLOADS]


def _policy_defaults(cluster_id: int | None = None) -> dict[int, str]:
    """Cluster id -> its ClusterPolicies' sandboxWorkloads default (node_kinds.sandbox_default:
    "" where none enables sandbox workloads or two disagree), of one cluster or all."""
    rows = ClusterObject.objects.filter(kind=ClusterObject.Kind.GPU_OPERATOR_POLICY)
    if cluster_id is not None:
        rows = rows.filter(cluster_id=cluster_id)
    specs: dict[int, list[dict[str, Any]]] = {}
    for cluster, data in rows.values_list("cluster_id", "data"):
        if isinstance(data, dict) and not data.get("error"):
            specs.setdefault(cluster, []).append(data.get("spec") or {})
    return {cluster: sandbox_default(found) for cluster, found in specs.items()}


def _policy_configmap(data: dict[str, Any]) -> str:
    spec = data.get("spec") if isinstance(data.get("spec"), dict) else {}
    return str(spec.get("mig_manager_config_name") or DEFAULT_MIG_PARTED_CONFIGMAP)


def _driver_gpus(found: Node) -> int | None:
    """The node's GPUs mig-parted partitions: those the NVIDIA driver holds, not the ones bound
    to vfio-pci for VMs beside them (inventory.snapshot.Node.passthrough_gpus)."""
    data = found.data if isinstance(found.data, dict) else {}
    vfio = data.get("passthrough_gpus") or 0
    return None if found.gpu_count is None else found.gpu_count - int(vfio)
