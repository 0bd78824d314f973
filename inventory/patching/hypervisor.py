"""The vGPU Manager on the hypervisor of a vGPU guest VM, judged against the bulletins. PURE.

GPU Feature Discovery in a vGPU guest labels the version of the vGPU Manager that hosts it
(`nvidia.com/vgpu.host-driver-version`, its branch in `nvidia.com/vgpu.host-driver-branch`):
the host driver on the hypervisor, the boundary between the VMs that share the GPU. The guest
cannot upgrade it, but the label shows it, so it is judged as a KubeVirt vm-vgpu host's own
vGPU Manager is (inventory.patching.driver_family: the bulletins' Linux KVM vGPU Manager rows of
its branch; NVIDIA numbers a branch's vGPU Manager alike for KVM, vSphere and Citrix
Hypervisor). That judgement is the hypervisor's: the guest's own patch status, components and
VEX stay about the guest's own stack.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from inventory.bulletins.csaf.fixes import Fix
from inventory.patching.driver_family import vgpu_host
from inventory.patching.status import (
    COMPONENTS,
    UNKNOWN,
    NodeStack,
    PatchStatus,
    node_patch_status,
)
from inventory.patching.versions import driver_branch
from inventory.sources.node_versions import NV

HOST_DRIVER_VERSION = NV + "vgpu.host-driver-version"
HOST_DRIVER_BRANCH = NV + "vgpu.host-driver-branch"
READ_FROM = f"label {HOST_DRIVER_VERSION}"
# Every component but the driver: the hypervisor's judgement is of its vGPU Manager alone.
_ONLY_THE_MANAGER = NodeStack(
    not_installed=frozenset(COMPONENTS.values()) - {"driver"}, vgpu_host=True
)


@dataclass(frozen=True)
class HypervisorManager:
    """What a guest's labels say of its hypervisor's vGPU Manager."""

    version: str
    branch_label: str | None  # as GFD writes it: "r535_00"


def hypervisor_manager(
    labels: Mapping[str, str], driver_source: str | None
) -> HypervisorManager | None:
    """The vGPU Manager a guest's labels name; None without the label, and on a vm-vgpu host
    (its own vGPU Manager is its driver, judged as such)."""
    version = str(labels.get(HOST_DRIVER_VERSION, "")).strip()
    if not version or vgpu_host(labels, driver_source):
        return None
    branch = str(labels.get(HOST_DRIVER_BRANCH, "")).strip()
    return HypervisorManager(version, branch or None)


def label_branch(branch_label: str) -> str | None:
    """ "r535_00" -> "R535" (NVIDIA's vGPU branch names); None for a name not of that shape."""
    found = re.fullmatch(r"[rR](\d+)(?:_\d+)?", branch_label.strip())
    return f"R{found.group(1)}" if found else None


def hypervisor_manager_status(manager: HypervisorManager, fixes: Iterable[Fix]) -> PatchStatus:
    """The vGPU Manager's patch status against the bulletins' vGPU Manager rows, by the same
    function a node's driver is judged by (its branch is its version's; a branch no bulletin
    lists is unknown). A branch label that names another branch than the version's makes it
    unknown: which is right, the labels do not say."""
    said = label_branch(manager.branch_label) if manager.branch_label else None
    read = driver_branch(manager.version)
    if said and read and said != read:
        why = (
            f"vGPU Manager {manager.version}: label {HOST_DRIVER_BRANCH}={manager.branch_label} "
            f"names branch {said}, its version branch {read}"
        )
        return PatchStatus(UNKNOWN, (), {}, (why,), unknown_components=("driver",))
    return node_patch_status({"driver_version": manager.version}, fixes, _ONLY_THE_MANAGER)
