"""GKE's managed DCGM: the namespace GKE runs it in is the platform's, found by evidence. PURE.

GKE Standard with GPU metrics on runs NVIDIA's DCGM host engine (`nvidia-dcgm`, privileged,
/dev mounted) and its exporter (`gke-dcgm-exporter`, labelled
`app.kubernetes.io/name=gke-managed-dcgm-exporter`) as DaemonSets in `gke-managed-system`. GKE
installs and reconciles them as it does its device plugin in kube-system; judged as a tenant's,
every GPU node got a critical "privileged pod of an unclassified tenant".

Never by the namespace's name (DESIGN §3, fail closed): a namespace is GKE's managed DCGM only
when the cluster is GKE (its nodes carry `cloud.google.com/gke-nodepool`) and everything the
namespace runs, its workloads and its pods, is GKE's DCGM images from GKE's own registry
(gke.gcr.io), with at least one DaemonSet of them. Anything else there (a tenant's miner in a
namespace named like GKE's) leaves the namespace unclassified and judged. No RBAC is asked for,
unlike a standalone NVIDIA dcgm-exporter (gpu_config._standalone): GKE's exporter reads the
kubelet's pod-resources socket, and no binding of it is known to look for.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from inventory.snapshot import Pod, Workload
from inventory.sources.images import GKE_DCGM_EXPORTER, image_version

GKE_NODE_POOL = "cloud.google.com/gke-nodepool"
GKE_REGISTRY = "gke.gcr.io/"
# Last repository segment of GKE's managed DCGM images: the host engine and the exporter (also
# taken under NVIDIA's naming, `nvidia-dcgm-exporter`, beside the host engine's `nvidia-dcgm`).
MANAGED_DCGM_IMAGES = frozenset({"nvidia-dcgm", GKE_DCGM_EXPORTER, "nvidia-dcgm-exporter"})


def is_gke(node_labels: Iterable[Mapping[str, str]]) -> bool:
    """The cluster is GKE: one of its nodes is in a GKE node pool."""
    return any(GKE_NODE_POOL in labels for labels in node_labels)


def gke_managed_dcgm_image(image: str) -> bool:
    repository, _ = image_version(image)
    return (
        repository.startswith(GKE_REGISTRY) and repository.rsplit("/", 1)[-1] in MANAGED_DCGM_IMAGES
    )


def gke_dcgm_candidates(workloads: Iterable[Workload]) -> set[str]:
    """Namespaces with a DaemonSet that runs one of GKE's managed DCGM images."""
    return {
        w.namespace
        for w in workloads
        if w.kind == "DaemonSet" and any(map(gke_managed_dcgm_image, w.images.values()))
    }


def gke_managed_namespaces(
    workloads: Iterable[Workload],
    pods: Iterable[Pod],
    node_labels: Iterable[Mapping[str, str]],
) -> frozenset[str]:
    """The namespaces that run GKE's managed DCGM and nothing else, on a GKE cluster."""
    if not is_gke(node_labels):
        return frozenset()
    workloads = list(workloads)
    daemonsets = gke_dcgm_candidates(workloads)
    images: dict[str, list[str]] = {}
    for w in workloads:
        images.setdefault(w.namespace, []).extend(w.images.values())
    for pod in pods:
        images.setdefault(pod.namespace, []).extend(c.image for c in pod.containers)
    return frozenset(
        namespace
        for namespace in daemonsets
        if all(gke_managed_dcgm_image(image) for image in images[namespace])
    )
