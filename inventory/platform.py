"""What normalise() needs to know about namespaces beyond the objects it reads: the platform
namespaces the deployment names and the tenant registry's namespaces (tenants.mapping)."""

from __future__ import annotations

from django.conf import settings

from inventory import snapshot as snap
from inventory.models import Cluster, ClusterObject, Pod
from inventory.sources.gke_managed import gke_dcgm_candidates, gke_managed_namespaces
from inventory.sources.openshift import (
    OPENSHIFT_NODE_LABEL,
    is_reserved_name,
    openshift_namespaces,
)
from inventory.sources.stack_namespaces import stack_namespaces, unvouched_stack_namespaces
from tenants.mapping import PLATFORM_PARTY, UNCLASSIFIED, platform_namespaces
from tenants.models import TenantNamespace


def platform_inputs(cluster: Cluster | None = None) -> dict[str, frozenset[str]]:
    """normalise()'s keyword arguments: GPUPOSTURE_PLATFORM_NAMESPACES and the namespaces
    tenants claim. With `cluster`, also the platform namespaces its stored inventory shows: a
    watch re-sync reads only what changed, not the operator's Deployment or namespace labels."""
    configured = set(settings.GPUPOSTURE_PLATFORM_NAMESPACES)
    if cluster is not None:
        configured |= stored_platform_namespaces(cluster)
    return {
        "configured_platform": frozenset(configured),
        "tenant_namespaces": frozenset(TenantNamespace.objects.values_list("name", flat=True)),
    }


# Who a namespace no tenant claims belongs to (DESIGN §3, fail closed): the platform only when
# it is a platform namespace; any other is unclassified, never the platform by default.
PLATFORM = PLATFORM_PARTY
UNCLASSIFIED_PARTY = UNCLASSIFIED


def cluster_platform_namespaces(cluster: Cluster) -> frozenset[str]:
    """The cluster's platform namespaces as pages can know them: GPUPOSTURE_PLATFORM_NAMESPACES
    and those its stored inventory shows (the defaults, the labelled ones, the GPU stack's as
    found: stored_platform_namespaces). One query, plus one for GKE's or OpenShift's own
    namespaces only where a namespace could be one."""
    return frozenset(settings.GPUPOSTURE_PLATFORM_NAMESPACES) | stored_platform_namespaces(cluster)


def unclaimed_party(namespace: str, platform: frozenset[str]) -> str:
    """The party of a namespace no tenant claims: "platform" for a platform namespace (see
    cluster_platform_namespaces), "unclassified" for any other."""
    return PLATFORM if namespace in platform else UNCLASSIFIED_PARTY


def stored_platform_namespaces(cluster: Cluster) -> frozenset[str]:
    """The platform namespaces by the cluster's stored namespaces, workloads and bindings
    (and the pods of namespaces only images place: _stack_pods)."""
    kinds = ("namespace", "workload", "binding")
    rows = ClusterObject.objects.filter(cluster=cluster, kind__in=kinds)
    labels: dict[str, dict[str, str]] = {}
    workloads = []
    bindings = []
    for kind, data in rows.values_list("kind", "data").iterator(chunk_size=2000):
        if kind == "namespace":
            labels[data["name"]] = data.get("labels") or {}
        elif kind == "workload":
            workloads.append(snap.from_dict(snap.Workload, data))
        else:
            bindings.append(snap.from_dict(snap.RoleBinding, data))
    return platform_namespaces(
        namespace_labels=labels,
        operator_namespaces=stack_namespaces(
            workloads, bindings, _stack_pods(cluster, workloads, bindings, labels)
        )
        | _gke_managed(cluster, workloads)
        | _openshift(cluster, {*labels, *(w.namespace for w in workloads)}),
    )


def _stack_pods(
    cluster: Cluster,
    workloads: list[snap.Workload],
    bindings: list[snap.RoleBinding],
    labels: dict[str, dict[str, str]],
) -> list[snap.Pod]:
    """The pods stack_namespaces needs: every pod where the sync read no Deployment (a
    snapshot of nodes and pods: they stand for their controllers), else those of the namespaces
    only images place (unvouched_stack_namespaces), which must hold nothing but the stack,
    unless they are the platform's anyway (`kube-system` with GKE's plugin, a labelled or a
    listed one). No query where no namespace needs them (a binding vouches for the stack's
    where RBAC was read), so most pages pay nothing for them."""
    if any(w.kind == "Deployment" for w in workloads):
        anyway = platform_namespaces(
            namespace_labels=labels, configured=settings.GPUPOSTURE_PLATFORM_NAMESPACES
        )
        namespaces = unvouched_stack_namespaces(workloads, bindings) - anyway
        if not namespaces:
            return []
        rows = Pod.objects.filter(cluster=cluster, namespace__in=namespaces)
    else:
        rows = Pod.objects.filter(cluster=cluster)
    data = rows.values_list("data", flat=True)
    return [snap.from_dict(snap.Pod, d) for d in data.iterator(chunk_size=2000)]


def _openshift(cluster: Cluster, namespaces: set[str]) -> frozenset[str]:
    """OpenShift's own namespaces (inventory.sources.openshift) on an OpenShift cluster; its
    nodes are asked only where a namespace bears one of the names OpenShift reserves."""
    reserved = {ns for ns in namespaces if is_reserved_name(ns)}
    if not reserved:
        return frozenset()
    labelled = cluster.nodes.filter(labels__has_key=OPENSHIFT_NODE_LABEL)
    return openshift_namespaces(reserved, labelled.values_list("labels", flat=True)[:1])


def _gke_managed(cluster: Cluster, workloads: list[snap.Workload]) -> frozenset[str]:
    """GKE's managed DCGM namespaces (inventory.sources.gke_managed), reading the pods of only
    the namespaces that could be one."""
    candidates = gke_dcgm_candidates(workloads)
    if not candidates:
        return frozenset()
    pods = Pod.objects.filter(cluster=cluster, namespace__in=candidates).values_list(
        "data", flat=True
    )
    return gke_managed_namespaces(
        workloads,
        (snap.from_dict(snap.Pod, data) for data in pods.iterator(chunk_size=2000)),
        cluster.nodes.values_list("labels", flat=True),
    )
