"""How DRA shares a node's GPUs, and whether its kubelet plugin serves the node. PURE.

DESIGN §2: under Dynamic Resource Allocation the NVIDIA DRA driver, not the device plugin,
decides whether a GPU is shared: a claim's (or its DeviceClass's) GpuConfig asks for
TimeSlicing or MPS, several claims may hold one device, and an adminAccess claim reaches
devices others use. GFD knows none of it and keeps labelling the node
`nvidia.com/gpu.sharing-strategy=none`, so a node the checks judge as time-sliced (its claims'
holdings: inventory.dra_devices) would read as unshared in the inventory, the checklist's
count of time-sliced nodes and the co-tenancy findings' `node_sharing_strategy`.

The node takes the weakest mode its in-use claims hold a device by (time-slicing weaker than
MPS weaker than MIG or a whole device); devices allocated exclusively leave its value as the
labels and the device-plugin config gave it. MIG devices claims hold as their own instances make
a node GFD calls unshared (and no device plugin gives GPUs out on) `mig`: its GPUs are split.
An adminAccess claim of a platform namespace (a monitoring agent) is the platform's reach, not
sharing, as in the checks (dra_holdings).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from gpuposture.base.enums import SharingMode
from inventory.dra_devices import NVIDIA_DRIVER, DraIndex, HeldDevice, device_kind, is_admin
from inventory.snapshot import ClusterSnapshot, Node
from inventory.snapshot_dra import DraClaim, DraClaimTemplate, DraDeviceClass, DraSlice
from inventory.sources.raw import as_int

TIME_SLICING, MPS = SharingMode.TIME_SLICING.value, SharingMode.MPS.value
MIG = "mig"  # the node's strategy where claims in use hold MIG devices of its GPUs
NONE = "none"  # a node strategy: whole GPUs
# Weaker first: a node is as shared as its least isolated device.
_RANK = {TIME_SLICING: 0, MPS: 1, MIG: 2}
# The node strategies a GPU may have, weaker first (vGPU a guest's, between MPS and MIG).
_STRATEGY_RANK = {TIME_SLICING: 0, MPS: 1, "vgpu": 2, MIG: 3, NONE: 4}
DRA_DRIVER = "dra_driver"  # inventory.components: the NVIDIA DRA driver's kubelet plugin


@dataclass(frozen=True)
class DraSharing:
    mode: str  # "time_slicing", "mps" or "mig"
    basis: str  # which claim and device, and why


def dra_index(
    claims: Sequence[DraClaim],
    slices: Sequence[DraSlice],
    classes: Sequence[DraDeviceClass],
    templates: Sequence[DraClaimTemplate],
    platform: frozenset[str],
) -> DraIndex | None:
    """The DRA objects indexed for reading nodes; None where no claim holds anything."""
    if not claims and not slices:
        return None
    snapshot = ClusterSnapshot(
        dra_claims=tuple(claims),
        dra_slices=tuple(slices),
        dra_device_classes=tuple(classes),
        dra_claim_templates=tuple(templates),
    )
    return DraIndex(snapshot, platform)


Held = list[tuple[str, str, str, str, int | None]]  # _held_on: one entry per held GPU device


def _held_on(node_name: str, index: DraIndex) -> Held:
    """(mode, claim, device, basis, GPU index) of each GPU device claims in use hold on the
    node, in the node strategies' terms ("none" for a device a claim holds alone), the
    platform's adminAccess reach left out (dra_holdings)."""
    found = []
    for key in sorted(index.claims):
        claim = index.claims[key]
        if not claim.reserved_for:
            continue  # allocated but used by no pod: nothing runs on the device through it
        for held in index.held_devices(claim):
            if held.node != node_name or not held.kind:
                continue
            if claim.namespace in index.platform and is_admin(claim, held.result):
                continue  # the platform's monitoring reach (dra_holdings): not sharing
            # A MIG device held as its own instance splits its GPU: the node is a MIG node.
            mode = MIG if held.kind == "mig" and held.mode == "mig_gi" else held.mode
            mode = NONE if mode == SharingMode.EXCLUSIVE.value else mode
            ref = f"{claim.namespace}/{claim.name}"
            found.append((mode, ref, held.result.device, held.basis, _gpu_index(held, index)))
    return found


def _gpu_index(held: HeldDevice, index: DraIndex) -> int | None:
    """The index of the GPU a held device is (a whole GPU) or is part of (a MIG device)."""
    result = held.result
    _slice, device = index.devices.get((result.driver, result.pool, result.device), (None, None))
    attributes = device.attributes if device else {}
    value = attributes.get("parentIndex" if held.kind == "mig" else "index")
    return as_int(value)


def dra_sharing(held: Held) -> DraSharing | None:
    """The weakest sharing of a GPU device on the node by claims in use (`held`: _held_on),
    None for none."""
    found = [
        (_RANK[mode], mode, ref, device, basis)
        for mode, ref, device, basis, _gpu in held
        if mode in _RANK
    ]
    if not found:
        return None
    rank, mode, ref, device, basis = min(found)
    claims = sorted({f[2] for f in found if f[0] == rank})
    so = "hold MIG devices" if mode == MIG else "share devices so"
    more = f"; {len(claims) - 1} more claim(s) {so}" if len(claims) > 1 else ""
    return DraSharing(mode, f"DRA: ResourceClaim {ref} holds {device} by {mode} ({basis}){more}")


def gpu_sharing(node: Node, before: str, held: Held) -> dict[str, str]:
    """Each GPU's own sharing where it is not the node's (`node.sharing_strategy`, the weakest
    of its GPUs): {GPU index: strategy}. A GPU no claim in use holds keeps the strategy the
    node had before DRA (`before`: its labels and device-plugin config); one claims hold takes
    the weaker of that and theirs. Empty (every GPU reads the node's) where a held device names
    no GPU index the node has: its GPU cannot be told, so none is said to be better isolated."""
    count = node.gpu_count or 0
    by_gpu: dict[int, list[str]] = {}
    for mode, _ref, _device, _basis, gpu in held:
        if gpu is None or not 0 <= gpu < count:
            return {}
        by_gpu.setdefault(gpu, []).append(mode)
    if not by_gpu:
        return {}
    found = {}
    for gpu in range(count):
        mode = before
        for other in by_gpu.get(gpu, ()):
            mode = _weakest(mode, other)
        if mode != node.sharing_strategy:
            found[str(gpu)] = mode
    return found


def _weakest(current: str, dra: str) -> str:
    """The weaker of a GPU's strategy and a DRA mode on it; an unknown strategy stays unknown
    unless DRA shows the weakest mode of all."""
    if current == "unknown":
        return TIME_SLICING if dra == TIME_SLICING else current
    return dra if _STRATEGY_RANK.get(dra, 0) < _STRATEGY_RANK.get(current, 0) else current


def with_dra(node: Node, index: DraIndex | None) -> Node:
    """The node with what DRA shows of it: its sharing where DRA shares its GPUs more weakly
    than its labels say, and its DRA kubelet plugin deployed where its ResourceSlices publish
    NVIDIA GPUs although no pod of the plugin is in the snapshot."""
    if index is None:
        return node
    if DRA_DRIVER not in node.deployed and _publishes_gpus(node.name, index):
        # Only the DRA driver's kubelet plugin publishes these slices: it runs there, in a pod
        # the snapshot lacks or on the host, so its version is unknown, never "not installed".
        absent = {k: v for k, v in node.not_installed.items() if k != DRA_DRIVER}
        deployed = {
            **node.deployed,
            DRA_DRIVER: f"ResourceSlices of {NVIDIA_DRIVER} publish the node's GPUs, which only "
            "the DRA driver's kubelet plugin does; no pod of it is in the snapshot",
        }
        node = replace(node, deployed=deployed, not_installed=absent)
    held = _held_on(node.name, index)  # read once: both the node's sharing and its GPUs'
    shared = _with_dra_sharing(node, held)
    return replace(shared, gpu_sharing=gpu_sharing(shared, node.sharing_strategy, held))


def _with_dra_sharing(node: Node, held: Held) -> Node:
    """The node with DRA's sharing where it is weaker than what its labels say."""
    sharing = dra_sharing(held)
    if sharing is None or not _weaker(sharing.mode, node.sharing_strategy):
        return node
    if sharing.mode == MIG and (node.sharing_strategy != "none" or node.gpu_capacity):
        # Only an unshared DRA node becomes MIG: the device plugin's pods take their mode from
        # the node's strategy, and MIG would make a whole GPU it gives out read as isolated.
        return node
    basis = f"{node.sharing_basis}; {sharing.basis}" if node.sharing_basis else sharing.basis
    # DRA time-slicing has no replica count (any number of claims may share a device): a count
    # the device-plugin config gave a node that was not time-sliced is not DRA's.
    replicas = node.time_slicing_replicas if node.sharing_strategy == TIME_SLICING else None
    return replace(
        node, sharing_strategy=sharing.mode, sharing_basis=basis, time_slicing_replicas=replicas
    )


def _weaker(mode: str, current: str) -> bool:
    """Whether DRA's `mode` is weaker than the node's current strategy. Unknown stays unknown
    unless DRA proves the weakest mode of all (nothing could be weaker than time-slicing)."""
    if current == "unknown":
        return mode == TIME_SLICING
    return _RANK[mode] < _RANK.get(current, len(_RANK))


def dra_gpu_count(node_name: str, index: DraIndex | None) -> tuple[int, str] | None:
    """(physical GPUs, basis) the NVIDIA driver's ResourceSlices publish for the node: distinct
    GPUs by UUID, a whole GPU's own or a MIG device's parentUUID (a partitionable GPU publishes
    itself and its partitions: one GPU). None where its slices publish none. A DRA node has no
    `nvidia.com/gpu` capacity by design: without this it would read as holding no GPU."""
    if index is None:
        return None
    gpus: set[str] = set()
    slices: set[str] = set()
    for s, d in index.devices.values():
        if s.node_name != node_name or s.driver != NVIDIA_DRIVER:
            continue
        kind = device_kind(s.driver, d.attributes, d.name)
        gpu = d.attributes.get("uuid", "") if kind == "gpu" else ""
        gpu = gpu or (d.attributes.get("parentUUID", "") if kind == "mig" else "")
        if kind == "gpu" and not gpu:
            gpu = f"{s.pool}/{d.name}"  # no UUID published: the device's own name is the GPU
        if gpu:
            gpus.add(gpu)
            slices.add(s.name)
    if not gpus:
        return None
    named = ", ".join(sorted(slices))
    return len(gpus), f"ResourceSlice {named} of {NVIDIA_DRIVER} ({len(gpus)} distinct GPUs)"


def _publishes_gpus(node_name: str, index: DraIndex) -> bool:
    return any(
        s.node_name == node_name
        and s.driver == NVIDIA_DRIVER
        and device_kind(s.driver, d.attributes, d.name)
        for s, d in index.devices.values()
    )
