"""The GPU host stack's versions on one node, from GFD labels and the image tags of the
GPU-stack pods on it (DESIGN §7: labels first, then the driver pod; unknown is None). PURE."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from inventory.snapshot import GPU_RESOURCE_PREFIX, Pod, Workload
from inventory.sources.images import (
    component_of,
    container_component,
    image_version,
    is_vgpu_guest_driver,
    is_vgpu_manager,
    other_vendor,
    stack_version,
    version_from_tag,
)

NV = GPU_RESOURCE_PREFIX
# driver_version_source of a vm-vgpu node whose driver version is its vGPU Manager image's.
VGPU_MANAGER_POD = "vgpu-manager-pod"
# driver_version_source of a vGPU guest VM whose driver version is its guest driver pod's image
# tag: the VM's own driver, judged as any node's driver (never as the host's vGPU Manager).
VGPU_GUEST_DRIVER_POD = "vgpu-guest-driver-pod"
# GFD's label on a vGPU guest VM (NVML in the guest sees a vGPU).
VGPU_PRESENT = NV + "vgpu.present"


def stack_versions(labels: dict[str, str], pods_on_node: Sequence[Pod]) -> dict[str, str | None]:
    """Node fields for the versions of the GPU host stack on this node."""
    components = component_versions(pods_on_node)
    driver, driver_source = _driver(labels, components)
    if driver_source == "driver-pod" and _runs_vgpu_manager(pods_on_node):
        driver_source = VGPU_MANAGER_POD  # the host driver is the vGPU Manager
    elif driver_source == "driver-pod" and vgpu_guest_driver(labels, pods_on_node):
        # The guest VM's own driver: judged as any node's driver, never as a vGPU Manager.
        driver_source = VGPU_GUEST_DRIVER_POD
    return {
        "driver_version": driver,
        "driver_version_source": driver_source,
        "cuda_driver_version": _cuda_version(labels),
        "container_toolkit_version": components.get("container_toolkit"),
        "device_plugin_version": components.get("device_plugin"),
        "dcgm_exporter_version": components.get("dcgm_exporter"),
        "mig_manager_version": components.get("mig_manager"),
        "dra_driver_version": components.get("dra_driver"),
    }


def _runs_vgpu_manager(pods: Iterable[Pod]) -> bool:
    return any(is_vgpu_manager(c.image) for pod in pods if pod.is_active for c in pod.containers)


def vgpu_guest_driver(labels: Mapping[str, str], pods: Iterable[Pod]) -> str | None:
    """The image of the vGPU guest driver a pod on this node runs: NVIDIA AI Enterprise's
    (`vgpu-guest-driver-<N>`), or any driver image on a node GFD labels a vGPU guest (the GPU
    Operator's vGPU docs build the guest driver as `<registry>/driver`; in a vGPU VM no other
    driver can run). None elsewhere."""
    guest = str(labels.get(VGPU_PRESENT, "")).strip().lower() == "true"
    for pod in sorted(pods, key=lambda p: (p.namespace, p.name)):
        for c in pod.containers if pod.is_active else ():
            if is_vgpu_guest_driver(c.image) or (guest and component_of(c.image) == "driver"):
                return c.image
    return None


def vgpu_guest_note(image: str) -> str:
    """What the driver of a vGPU guest VM is, as the node's `components` says where it runs."""
    return (
        f"the vGPU guest driver of this VM, {image}; not the host's vGPU Manager, which runs "
        "on the hypervisor"
    )


def _dotted(labels: dict[str, str], major: str, minor: str, patch: str | None = None) -> str | None:
    """major.minor[.patch] from separate labels; both major and minor are needed, and the
    patch label where one is named: GFD writes all three together (an empty patch for a
    two-part version), so a set without it is partial and says no version (580.159 could be
    580.159.03)."""
    parts = [labels.get(major, "").strip(), labels.get(minor, "").strip()]
    if not all(parts) or (patch is not None and patch not in labels):
        return None
    rest = labels.get(patch, "").strip() if patch else ""
    return ".".join(parts + [rest] if rest else parts)


def _driver(labels: dict[str, str], components: dict[str, str]) -> tuple[str | None, str | None]:
    """The driver version and where it came from, in the order of trust DESIGN §7 gives."""
    cuda = NV + "cuda."
    version = str(labels.get(cuda + "driver-version.full") or "").strip() or _dotted(
        labels,
        cuda + "driver-version.major",
        cuda + "driver-version.minor",
        cuda + "driver-version.revision",
    )
    if _is_driver_version(version):
        return version, "gfd-label"
    legacy = _dotted(labels, cuda + "driver.major", cuda + "driver.minor", cuda + "driver.rev")
    if _is_driver_version(legacy):
        return legacy, "gfd-label-legacy"
    if components.get("driver"):
        return components["driver"], "driver-pod"
    return None, None


# What GFD writes from NVML: major.minor[.patch] (550.54.15, 535.104.05; 418.87 of old). A
# branch alone ("535"), "N/A" or a suffixed value is no version: never guessed (DESIGN §7),
# the next source is asked, else the driver is unknown.
_DRIVER_VERSION = re.compile(r"\d+\.\d+(?:\.\d+)?")


def _is_driver_version(value: str | None) -> bool:
    return bool(value) and bool(_DRIVER_VERSION.fullmatch(str(value).strip()))


def _cuda_version(labels: dict[str, str]) -> str | None:
    cuda = NV + "cuda."
    return (
        labels.get(cuda + "runtime-version.full")
        or _dotted(labels, cuda + "runtime-version.major", cuda + "runtime-version.minor")
        or _dotted(labels, cuda + "runtime.major", cuda + "runtime.minor")
    )


def component_versions(pods: Iterable[Pod]) -> dict[str, str]:
    """GPU-stack component -> version, from the images of the live pods on one node."""
    found: dict[str, set[str]] = {}
    for pod in pods:
        if not pod.is_active:
            continue  # a finished pod may be the version that was replaced
        for container in pod.containers:
            component = container_component(container.name, container.image, container.command)
            version = stack_version(container.image)
            if component == "driver" and version:
                # A driver tag's second number is the kernel it was built for (OpenShift's
                # `535.216.01-4.18.0-513.el8_9...-rhcos4.13`), never part of the driver's.
                version = version.split("-", 1)[0]
            if component and version:
                found.setdefault(component, set()).add(version)
    # Two versions at once means a rolling upgrade; the older one still runs, so patch status
    # must not be judged on the newer.
    return {component: min(versions, key=_version_key) for component, versions in found.items()}


def _version_key(version: str) -> tuple[tuple[int, ...], str]:
    return tuple(int(n) for n in re.findall(r"\d+", version)), version


def operator_version(
    workloads: Iterable[Workload], from_pod: OperatorPodVersion | None = None
) -> str | None:
    """The NVIDIA GPU Operator version: the image of its Deployment, else, where the snapshot
    read no Deployment of it, its own pod's image (`from_pod`, operator_pod_version), else the
    version label of a workload named gpu-operator. Two at once (an upgrade in flight): the
    older. Another vendor's operator (AMD's `rocm/gpu-operator`) is not NVIDIA's, whatever its
    name: its version never stands for, nor lowers, NVIDIA's."""
    workloads = list(workloads)
    by_image = {
        version
        for w in workloads
        if w.kind == "Deployment"
        for image in w.images.values()
        if component_of(image) == "gpu_operator" and (version := image_version(image)[1])
    }
    if not by_image and from_pod is not None:
        by_image = {from_pod.version}
    by_label = {
        version
        for w in workloads
        if w.name == "gpu-operator"
        and not any(other_vendor(image) for image in w.images.values())
        and (version := version_from_tag(w.labels.get("app.kubernetes.io/version", "")))
    }
    found = by_image or by_label
    return min(found, key=_version_key) if found else None


@dataclass(frozen=True)
class OperatorPodVersion:
    """The GPU Operator's version as its own pod's image tag gives it, and that pod."""

    version: str
    pod: str  # "namespace/name"


def operator_pod_version(
    workloads: Iterable[Workload], pods: Iterable[Pod], tenant_claimed: Collection[str] = ()
) -> OperatorPodVersion | None:
    """The GPU Operator's version from the image tag of its own pod, where the snapshot read no
    Deployment of it (`kubectl get nodes,pods`): DESIGN §7 reads it from the Deployment, whose
    image its pod runs, so the pod's tag is the same fact. None where a Deployment of it was
    read (its image decides, a digest-pinned one staying unknown). Only an active pod of a
    ReplicaSet (a Deployment's pod) outside the namespaces tenants claim (a tenant's pod
    running the operator's image is no operator of the cluster's); a digest-pinned image gives
    no version. Two at once (an upgrade in flight): the older."""
    if any(
        w.kind == "Deployment" and any(component_of(i) == "gpu_operator" for i in w.images.values())
        for w in workloads
    ):
        return None
    found = [
        OperatorPodVersion(version, f"{pod.namespace}/{pod.name}")
        for pod in pods
        if pod.is_active and pod.owner_kind == "ReplicaSet" and pod.namespace not in tenant_claimed
        for container in pod.containers
        if not container.ephemeral
        and component_of(container.image) == "gpu_operator"
        and (version := image_version(container.image)[1])
    ]
    return min(found, key=lambda f: (_version_key(f.version), f.pod)) if found else None
