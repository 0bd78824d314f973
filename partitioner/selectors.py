"""Reads for the MIG partitioner: the trust classes of the tenants a user may see, the
MIG-capable nodes a user may see, and what a node's mig-parted config gives its GPUs."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Q, QuerySet

from inventory.models import ClusterObject, Node
from inventory.sources.cloud_labels import gke_partition_size
from inventory.sources.configs import MIG_PARTED
from inventory.sources.gpu_operator import DEFAULT_MIG_PARTED_CONFIGMAP
from partitioner.config import ConfigSource, NodeLayout, node_layout, partition_layout
from partitioner.profiles import MODELS
from partitioner.tenancy import ClassRules
from tenants.models import Tenant

User = AbstractBaseUser | AnonymousUser
MAX_NODES = 500  # the "load from node" list; more than this is not a list anyone scrolls
_FAMILIES = sorted({key.split("-")[0] for key in MODELS})  # "A100", "B200", ...


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
    """Nodes the user may see that have a MIG config label or a GPU model of our table."""
    capable = Q(mig_config__gt="")
    for family in _FAMILIES:
        capable |= Q(gpu_model__icontains=family)
    return (
        Node.objects.visible_to(user)
        .filter(capable)
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
        gpu_count=found.gpu_count,
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


def _policy_configmap(data: dict[str, Any]) -> str:
    spec = data.get("spec") if isinstance(data.get("spec"), dict) else {}
    return str(spec.get("mig_manager_config_name") or DEFAULT_MIG_PARTED_CONFIGMAP)
