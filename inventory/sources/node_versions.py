"""The GPU host stack's versions on one node, from GFD labels and the image tags of the
GPU-stack pods on it (DESIGN §7: labels first, then the driver pod; unknown is None). PURE."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from inventory.snapshot import GPU_RESOURCE_PREFIX, Pod, Workload
from inventory.sources.images import (
    component_of,
    container_component,
    image_version,
    is_vgpu_manager,
    other_vendor,
    stack_version,
    version_from_tag,
)

NV = GPU_RESOURCE_PREFIX
# driver_version_source of a vm-vgpu node whose driver version is its vGPU Manager image's.
VGPU_MANAGER_POD = "vgpu-manager-pod"


def stack_versions(labels: dict[str, str], pods_on_node: Sequence[Pod]) -> dict[str, str | None]:
    """Node fields for the versions of the GPU host stack on this node."""
    components = component_versions(pods_on_node)
    driver, driver_source = _driver(labels, components)
    if driver_source == "driver-pod" and _runs_vgpu_manager(pods_on_node):
        driver_source = VGPU_MANAGER_POD  # the host driver is the vGPU Manager
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


def _dotted(labels: dict[str, str], major: str, minor: str, patch: str | None = None) -> str | None:
    """major.minor[.patch] from separate labels; both major and minor are needed."""
    parts = [labels.get(major, "").strip(), labels.get(minor, "").strip()]
    if not all(parts):
        return None
    rest = labels.get(patch, "").strip() if patch else ""
    return ".".join(parts + [rest] if rest else parts)


def _driver(labels: dict[str, str], components: dict[str, str]) -> tuple[str | None, str | None]:
    """The driver version and where it came from, in the order of trust DESIGN §7 gives."""
    cuda = NV + "cuda."
    version = labels.get(cuda + "driver-version.full") or _dotted(
        labels,
        cuda + "driver-version.major",
        cuda + "driver-version.minor",
        cuda + "driver-version.revision",
    )
    if version:
        return version, "gfd-label"
    legacy = _dotted(labels, cuda + "driver.major", cuda + "driver.minor", cuda + "driver.rev")
    if legacy:
        return legacy, "gfd-label-legacy"
    if components.get("driver"):
        return components["driver"], "driver-pod"
    return None, None


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
            if component and version:
                found.setdefault(component, set()).add(version)
    # Two versions at once means a rolling upgrade; the older one still runs, so patch status
    # must not be judged on the newer.
    return {component: min(versions, key=_version_key) for component, versions in found.items()}


def _version_key(version: str) -> tuple[tuple[int, ...], str]:
    return tuple(int(n) for n in re.findall(r"\d+", version)), version


def operator_version(workloads: Iterable[Workload]) -> str | None:
    """The NVIDIA GPU Operator version: the image of its Deployment, else the version label of
    a workload named gpu-operator. Two at once (an upgrade in flight): the older. Another
    vendor's operator (AMD's `rocm/gpu-operator`) is not NVIDIA's, whatever its name: its
    version never stands for, nor lowers, NVIDIA's."""
    workloads = list(workloads)
    by_image = {
        version
        for w in workloads
        if w.kind == "Deployment"
        for image in w.images.values()
        if component_of(image) == "gpu_operator" and (version := image_version(image)[1])
    }
    by_label = {
        version
        for w in workloads
        if w.name == "gpu-operator"
        and not any(other_vendor(image) for image in w.images.values())
        and (version := version_from_tag(w.labels.get("app.kubernetes.io/version", "")))
    }
    found = by_image or by_label
    return min(found, key=_version_key) if found else None
