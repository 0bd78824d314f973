"""A DRA node's GPU model and driver version from the NVIDIA DRA driver's ResourceSlices. PURE.

A node under the NVIDIA DRA driver without GPU Feature Discovery has no
`nvidia.com/gpu.product` and no driver-version label: its model and driver version were unknown,
so the bulletins (PATCH/STACK) and the model-based checks (LeftoverLocals, MIG profiles) could
not judge it. The driver's kubelet plugin publishes, on each GPU device of its slices, the
`productName`, `driverVersion` and `cudaDriverVersion` NVML reports (the same NVML reads GFD
labels), and on each MIG device its parent GPU's. So where no GFD label gives them they come
from the slices, named in `gpu_model_basis` / `driver_version_basis`; GFD's labels win where
present. Slices that disagree (two models, two driver versions on one node) leave the fact
unknown, the basis naming each value and its slice: picking one would judge the node on a guess.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace

from inventory.dra_devices import NVIDIA_DRIVER, DraIndex, device_kind
from inventory.snapshot import Node
from inventory.sources.node_sharing import PRODUCT

# driver_version_source of a driver version read from the node's ResourceSlices.
SLICE_SOURCE = "dra-resourceslice"
# Sources that win over the slices: GFD's labels, and a vm-vgpu node's vGPU Manager (the host
# driver the bulletins' vGPU rows judge; the DRA driver does not serve such a node).
_WINS = ("gfd-label", "gfd-label-legacy", "vgpu-manager-pod")
_MODEL, _DRIVER, _CUDA = "productName", "driverVersion", "cudaDriverVersion"


@dataclass(frozen=True)
class SliceFact:
    value: str | None  # None where the slices disagree
    basis: str


def gfd_product(name: str) -> str:
    """An NVML product name as GFD writes it in `nvidia.com/gpu.product` (label values hold no
    spaces): "NVIDIA A100-SXM4-40GB" -> "NVIDIA-A100-SXM4-40GB", the form bulletins' product
    matching and the MIG profile tables read."""
    return "-".join(name.split())


_SEMVER = re.compile(r"(\d+)\.(\d+)\.(\d+)")


def nvidia_driver_version(version: str) -> str:
    """A driver version as NVIDIA writes it (DESIGN §8): the DRA driver publishes semver
    (535.104.5) where NVML and the bulletins write the patch in two digits (535.104.05).
    Anything but major.minor.patch is kept as published."""
    match = _SEMVER.fullmatch(version)
    if not match:
        return version
    major, minor, patch = match.groups()
    return f"{major}.{minor}.{int(patch):02d}"


def slice_facts(node_name: str, index: DraIndex) -> dict[str, SliceFact]:
    """attribute -> what the node's NVIDIA GPU and MIG devices agree on (or that they do not),
    for productName (in GFD's form), driverVersion and cudaDriverVersion; an attribute no
    device publishes is left out."""
    seen: dict[str, dict[str, set[str]]] = {}
    for s, d in index.devices.values():
        if s.node_name != node_name or s.driver != NVIDIA_DRIVER:
            continue
        # A passthrough (vfio) GPU's host driver is vfio-pci: it has no NVIDIA driver version.
        if device_kind(s.driver, d.attributes, d.name) not in ("gpu", "mig"):
            continue
        for attribute in (_MODEL, _DRIVER, _CUDA):
            value = d.attributes.get(attribute, "").strip()
            if value:
                value = gfd_product(value) if attribute == _MODEL else value
                value = nvidia_driver_version(value) if attribute == _DRIVER else value
                seen.setdefault(attribute, {}).setdefault(value, set()).add(s.name)
    return {attribute: _fact(attribute, values) for attribute, values in seen.items()}


def _fact(attribute: str, values: Mapping[str, set[str]]) -> SliceFact:
    if len(values) == 1:
        ((value, slices),) = values.items()
        return SliceFact(value, f"{attribute} of ResourceSlice {_names(slices)} of {NVIDIA_DRIVER}")
    each = ", ".join(f"{v} ({_names(s)})" for v, s in sorted(values.items()))
    return SliceFact(
        None, f"unknown: the ResourceSlices of {NVIDIA_DRIVER} disagree on {attribute}: {each}"
    )


def _names(slices: set[str]) -> str:
    return ", ".join(sorted(slices))


def with_slice_stack(node: Node, index: DraIndex | None) -> Node:
    """The node with the model and driver version its slices publish where no GFD label gives
    them (a cloud's or an instance type's model is a pool's claim; the slice is the device's)."""
    if index is None:
        return node
    facts = slice_facts(node.name, index)
    if not facts:
        return node
    changes: dict[str, object] = {}
    model = facts.get(_MODEL)
    if model is not None and not node.labels.get(PRODUCT):
        changes.update(gpu_model=model.value, gpu_model_basis=model.basis)
    driver = facts.get(_DRIVER)
    if driver is not None and node.driver_version_source not in _WINS:
        changes.update(_driver_changes(node, driver))
    cuda = facts.get(_CUDA)
    if cuda is not None and cuda.value and not node.cuda_driver_version:
        changes["cuda_driver_version"] = cuda.value
    return replace(node, **changes) if changes else node


def _driver_changes(node: Node, driver: SliceFact) -> dict[str, object]:
    pod = node.driver_version if node.driver_version_source == "driver-pod" else None
    if driver.value is None:
        seen = f"; the driver pod's image says {pod}" if pod else ""
        return {
            "driver_version": None,
            "driver_version_source": None,
            "driver_version_basis": driver.basis + seen,
        }
    if pod and _numbers(pod) == _numbers(driver.value):
        # The same version: the pod's tag keeps NVIDIA's spelling (535.104.05), which the
        # slice's semver form drops (535.104.5).
        return {}
    # The slice is the loaded driver as NVML reports it; a pod's tag is what it installs.
    seen = f" (the driver pod's image says {pod})" if pod else ""
    return {
        "driver_version": driver.value,
        "driver_version_source": SLICE_SOURCE,
        "driver_version_basis": driver.basis + seen,
    }


def _numbers(version: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", version))
