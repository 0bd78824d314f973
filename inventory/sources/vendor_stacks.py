"""The namespaces of other vendors' GPU stacks that carry NVIDIA's image names. PURE.

AMD's GPU Operator (`rocm/gpu-operator`) and device plugin (`rocm/k8s-device-plugin`) reuse the
names of NVIDIA's. They are never NVIDIA's components (images.component_of: their versions are
not judged by NVIDIA's bulletins), but they are the host stack of their own GPU nodes, as
privileged by design as NVIDIA's: their namespace as found is the platform's, placed by the same
evidence as the GPU Operator's (stack_operators.operator_deployment_namespaces: the operator's
image AND a ClusterRoleBinding naming the namespace or its operands beside it), and a plugin
DaemonSet's only where a ClusterRoleBinding names its namespace. A namespace's name never places
it, and a tenant's namespace stays the tenant's (tenants.mapping.platform_namespaces).

Intel's device plugins carry names of their own: the Intel Device Plugins Operator
(`intel/intel-deviceplugin-operator`) and its GPU and Gaudi plugins are placed by the same
evidence. Without it, a cluster running them had the operator's namespace judged as a tenant's
nobody owns (its privileged plugin raising tenant findings for "unclassified"). Their plugins
often run with no RBAC at all (Habana's, Intel's without the operator): where RBAC was read
and nothing vouches for the namespace, it stays unclassified and the sync says how to make it
the platform's (stack_namespaces.refused_warnings).

AMD's DRA driver (`rocm/k8s-gpu-dra-driver`, ROCm/k8s-gpu-dra-driver; the AMD GPU Operator can
deploy it in place of the device plugin) hands out the same GPUs through DRA: its kubelet plugin
DaemonSet is privileged and its chart binds a ClusterRole to its service account (it publishes
ResourceSlices). It is placed as the device plugin is, on the same evidence.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from inventory.snapshot import RoleBinding, Workload
from inventory.sources.images import image_version, namesake, other_vendor
from inventory.sources.stack_operators import (
    cluster_bound_namespaces,
    operator_deployment_namespaces,
)


def vendor_stack_namespaces(
    workloads: Iterable[Workload], bindings: Iterable[RoleBinding] | None
) -> frozenset[str]:
    """Namespaces of another vendor's GPU Operator (with its RBAC or operands) or device-plugin
    DaemonSet (with its RBAC) whose images carry NVIDIA's names."""
    workloads = list(workloads)
    bindings = list(bindings or ())
    operator = operator_deployment_namespaces(
        workloads,
        bindings,
        is_operator=lambda image: vendor_role(image) == "gpu_operator",
        is_operand=lambda image: vendor_role(image) not in (None, "gpu_operator"),
    )
    bound = cluster_bound_namespaces(bindings)
    # A ClusterRoleBinding vouches; where the snapshot read none, the vendor's own published
    # image places it if the namespace holds nothing else (find_stack_namespaces). Only the
    # vendor's own repository: a vendor's word anywhere in a path (`intel-fan/...`) is
    # anyone's to write.
    plugins = {
        w.namespace
        for w in vendor_plugin_daemonsets(workloads)
        if (bound is not None and w.namespace in bound)
        or (bound is None and any(published(i) for i in w.images.values()))
    }
    return operator | plugins


# Where the vendors publish their device plugins (Docker Hub's `rocm` and `intel`
# organisations, Red Hat's catalogue for Intel's, Habana's vault).
PUBLISHED = ("rocm/", "intel/", "registry.connect.redhat.com/intel/", "vault.habana.ai/")


# A path component of a repository (the distribution reference grammar): `..` is none.
_COMPONENT = re.compile(r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*")
DOCKER_HUB = ("docker.io/", "index.docker.io/", "registry-1.docker.io/")


def published(image: str) -> bool:
    """A device-plugin (or DRA driver) image from its vendor's own repository, spelled as a
    registry would resolve it (Docker Hub by any of its names)."""
    repository = image_version(image)[0]
    for host in DOCKER_HUB:
        repository = repository.removeprefix(host)
    path = repository.split("/")
    start = 1 if repository.startswith("vault.habana.ai/") or "." in path[0] else 0
    valid = all(_COMPONENT.fullmatch(part) for part in path[start:])
    return valid and vendor_role(image) in HANDING_ROLES and repository.startswith(PUBLISHED)


# The roles of the images that hand a node's devices to pods: a device plugin, or a DRA
# driver's kubelet plugin (one per node, a DaemonSet, as the plugin).
HANDING_ROLES = ("device_plugin", "dra_driver")


def vendor_plugin_daemonsets(workloads: Iterable[Workload]) -> list[Workload]:
    """The DaemonSets running another vendor's device plugin (AMD's, Intel's GPU or Gaudi
    plugin, Habana's) or DRA driver (AMD's)."""
    return [
        w
        for w in workloads
        if w.kind == "DaemonSet"
        and any(vendor_role(image) in HANDING_ROLES for image in w.images.values())
    ]


def handing_role(workload: Workload) -> str:
    """What another vendor's DaemonSet runs, as the sync names it: "DRA driver" where its
    images run a DRA driver and no device plugin, else "device plugin"."""
    roles = {vendor_role(image) for image in workload.images.values()}
    if "dra_driver" in roles and "device_plugin" not in roles:
        return "DRA driver"
    return "device plugin"


# Other vendors' stack images whose names are their own (the last segment of the repository).
OWN_NAMES = {
    "intel-deviceplugin-operator": "gpu_operator",
    "intel-gpu-plugin": "device_plugin",
    "intel-gpu-initcontainer": "device_plugin",
    "intel-gaudi-device-plugin": "device_plugin",
    # Habana's Gaudi plugin (vault.habana.ai/docker-k8s-device-plugin/docker-k8s-device-plugin).
    "docker-k8s-device-plugin": "device_plugin",
    # AMD's DRA driver (docker.io/rocm/k8s-gpu-dra-driver), which publishes gpu.amd.com slices.
    "k8s-gpu-dra-driver": "dra_driver",
}


def vendor_role(image: str) -> str | None:
    """The stack role of another vendor's image: the NVIDIA component it is named after, or
    its own name's (OWN_NAMES); None for NVIDIA's images and any other."""
    if found := namesake(image):
        return found
    if not other_vendor(image):
        return None
    return OWN_NAMES.get(image_version(image)[0].rsplit("/", 1)[-1])
