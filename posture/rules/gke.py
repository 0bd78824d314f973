"""What GKE, not the cluster's user, runs on a GKE GPU node: the facts STACK-004, STACK-006 and
ATTR-003 add to their evidence so their fix is one a GKE user can make. PURE.

On GKE Standard without the GPU Operator, GKE installs the driver (its nvidia-driver-installer),
runs its own device plugin in kube-system and, with GPU metrics on, its managed DCGM exporter in
gke-managed-system. None of these is deployed or configured by the user: GKE patches them with
its node version (the node's kubeletVersion, `v1.31.6-gke.1020000`). So "deploy GFD, run the
toolkit and plugin as GPU Operator pods" or "deploy DCGM-Exporter" cannot be done there.
Only where the evidence shows it: a node in a GKE node pool that runs GKE's device plugin."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from inventory.snapshot import Node
from inventory.sources.gke_managed import GKE_NODE_POOL, gke_managed_dcgm_image
from inventory.sources.images import component_of, is_gke_device_plugin
from posture.inputs import PostureInputs

GKE_DRIVER_HOW = (
    "GKE installs the driver and labels no version (`gke-gpu-driver-version` is a channel): run "
    "`nvidia-smi -q -x > {node}.xml` on the node and `manage.py import_nvidia_smi --cluster "
    "CLUSTER --node {node} {node}.xml`, then re-sync"
)
GKE_PLUGIN_HOW = (
    "GKE's own device plugin (pod {pod}): GKE manages it and patches it with GKE node version "
    "upgrades; its image tag is a GKE build, not an NVIDIA release"
)
GKE_INJECTION = (
    "GKE-managed: GKE's device plugin and node image decide how GPUs reach containers; CDI is "
    "not a setting a GKE user turns on"
)


def _gke_pod(inputs: PostureInputs, node: Node, matches: Callable[[str], bool]) -> str | None:
    for pod in inputs.pods_by_node.get(node.name, ()):
        if pod.is_active and any(matches(c.image) for c in pod.containers):
            return f"{pod.namespace}/{pod.name}"
    return None


def gke_node_version(node: Node) -> str | None:
    """The node's GKE version (its kubelet's, `v1.31.6-gke.1020000`), else None."""
    version = node.kubelet_version or ""
    return version if "-gke." in version else None


def gke_stack(inputs: PostureInputs, node: Node) -> dict[str, Any] | None:
    """What GKE manages on the node, for the evidence; None unless the node is in a GKE node
    pool and runs GKE's device plugin."""
    if GKE_NODE_POOL not in node.labels:
        return None
    plugin = _gke_pod(inputs, node, is_gke_device_plugin)
    if plugin is None:
        return None
    return {
        "node_version": gke_node_version(node),
        "device_plugin": GKE_PLUGIN_HOW.format(pod=plugin),
        "driver": GKE_DRIVER_HOW.format(node=node.name),
    }


def gke_managed_exporter(inputs: PostureInputs, node: Node | None) -> str | None:
    """The pod of GKE's managed DCGM exporter on the node, in a platform namespace (found as
    GKE's by inventory.sources.gke_managed), else None."""
    if node is None or GKE_NODE_POOL not in node.labels:
        return None
    where = _gke_pod(inputs, node, _managed_exporter)
    platform = inputs.platform_namespaces
    return where if where and where.split("/", 1)[0] in platform else None


def _managed_exporter(image: str) -> bool:
    return gke_managed_dcgm_image(image) and component_of(image) == "dcgm_exporter"
