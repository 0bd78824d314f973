"""Which devices DRA claims hold, where, and how they are shared (DESIGN §2). PURE.

A claim's allocation names each device by driver, pool and device name; the ResourceSlice of
that driver and pool gives the node and the device's attributes (NVIDIA's gpu.nvidia.com
publishes type gpu / mig, uuid, index, productName, and for MIG parentUUID and profile). The
mode of a held device: the NVIDIA driver's opaque sharing config (claim's, else its class's)
gives TimeSlicing or MPS; a MIG device is its own GPU instance; a device allocated to several
claims, or reached by adminAccess, is shared with no isolation (time-slicing); otherwise the
claim holds it exclusively; an AMD compute partition is a compute instance of its GPU
(inventory.dra_amd). An adminAccess claim of a platform namespace (a monitoring agent:
the use Kubernetes made adminAccess for) is the platform's reach, like DCGM-Exporter's under the
device plugin: it does not turn the tenant's whole device into a shared one, it is named in
the basis.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from gpuposture.base.enums import SharingMode
from inventory.dra_amd import (
    AMD_DRIVER,
    is_auto_partition,
    is_compute_partition,
    parent_gpu,
    partition_basis,
    partition_profile,
)
from inventory.snapshot import ClusterSnapshot, Pod
from inventory.snapshot_dra import (
    DraClaim,
    DraConfig,
    DraDevice,
    DraRequest,
    DraResult,
    DraSlice,
)

NVIDIA_DRIVER = "gpu.nvidia.com"
SHARING_MODES = {"timeslicing": SharingMode.TIME_SLICING.value, "mps": SharingMode.MPS.value}
GPU_TYPES = ("gpu", "mig", "vfio", "partition")
# AMD's DRA driver (ROCm/k8s-gpu-dra-driver, docs/driver-attributes.md) publishes `type`
# amdgpu for a whole GPU, amdgpu-partition for a compute partition (CPX, DPX, ... of an
# Instinct GPU), vfio for a passthrough GPU; no uuid, so its devices go by DRA name. A
# compute partition is a compute instance of its GPU (mig_ci: inventory.dra_amd).
DEVICE_TYPES = {"amdgpu": "gpu", "amdgpu-partition": "partition"}


@dataclass(frozen=True)
class HeldDevice:
    """One device a claim holds, resolved through its ResourceSlice where there is one."""

    claim: DraClaim
    result: DraResult
    node: str | None
    device_id: str  # its UUID where published, else "dra:<driver>/<pool>/<device>"
    kind: str  # "gpu", "mig", "vfio", "partition" (AMD's), or "" when not a GPU device
    mode: str  # DESIGN §2 sharing mode
    basis: str  # why that mode
    # The mode the claim's own allocation and config give, as if no other tenant's adminAccess
    # reached the device: what its tenant chose to share by (the mode an approval of theirs
    # covers). `mode` where nothing reaches it; an adminAccess claim's own is its reach.
    own_mode: str = ""
    product: str = ""
    profile: str = ""  # MIG profile, or an AMD partition's partitionProfile ("cpx_nps4")
    parent: str = ""  # MIG parent GPU UUID
    # The GPU an AMD compute partition is on, where its slice tells (dra_amd.parent_gpu): the
    # partitions of one GPU meet there, whatever their device names. "" for other devices.
    gpu: str = ""


class DraIndex:
    """The snapshot's DRA objects indexed for lookups by pod, node and device."""

    def __init__(self, snapshot: ClusterSnapshot, platform: frozenset[str] = frozenset()) -> None:
        self.platform = platform  # namespaces whose adminAccess claims are the platform's
        self.claims = {(c.namespace, c.name): c for c in snapshot.dra_claims}
        self.classes = {c.name: c for c in snapshot.dra_device_classes}
        self.templates = {(t.namespace, t.name): t for t in snapshot.dra_claim_templates}
        self.devices: dict[tuple[str, str, str], tuple[DraSlice, DraDevice]] = {
            (s.driver, s.pool, d.name): (s, d) for s in snapshot.dra_slices for d in s.devices
        }
        holders: dict[tuple[str, str, str], set[tuple[str, str]]] = {}
        admins: dict[tuple[str, str, str], set[tuple[str, str]]] = {}
        for claim in snapshot.dra_claims:
            for r in claim.results:
                key = (r.driver, r.pool, r.device)
                holders.setdefault(key, set()).add((claim.namespace, claim.name))
                if is_admin(claim, r):
                    admins.setdefault(key, set()).add((claim.namespace, claim.name))
        self.holders = holders  # every claim allocated the device, adminAccess ones too
        self.admins = admins  # those of them that reach it by adminAccess

    def claims_of_pod(self, pod: Pod) -> list[DraClaim]:
        """The claims a pod uses: by name, or the one generated for it from a template
        (status, else the claim owned by the pod with its pod-claim-name), else a claim that
        lists the pod among its consumers."""
        found: dict[str, DraClaim] = {}
        for entry in pod.resource_claims:
            claim = self.claims.get((pod.namespace, entry.claim)) if entry.claim else None
            if claim is None and entry.template:
                claim = next(
                    (
                        c
                        for (ns, _), c in self.claims.items()
                        if ns == pod.namespace
                        and c.owner_pod == pod.name
                        and c.pod_claim_name in (None, entry.name)
                    ),
                    None,
                )
            if claim is not None:
                found[claim.name] = claim
        if not pod.resource_claims:
            return []
        for (ns, name), claim in self.claims.items():
            if ns == pod.namespace and f"pods/{pod.name}" in claim.reserved_for:
                found.setdefault(name, claim)
        return [found[name] for name in sorted(found)]

    def held_devices(self, claim: DraClaim) -> list[HeldDevice]:
        return [self._held(claim, r) for r in claim.results]

    def _held(self, claim: DraClaim, result: DraResult) -> HeldDevice:
        key = (result.driver, result.pool, result.device)
        slice_, device = self.devices.get(key, (None, None))
        attributes = device.attributes if device else {}
        kind = device_kind(result.driver, attributes, result.device)
        device_id = dra_device_id(result.driver, result.pool, result.device, attributes)
        # Node-local drivers name the pool after the node; the slice says for certain.
        node = (slice_.node_name if slice_ else None) or claim.node_name
        mode, basis = self.mode(claim, result, kind)
        own_mode = mode
        if not is_admin(claim, result) and self._reachers(claim, result):
            own_mode = self._own_mode(claim, result, kind)[0]
        partitioned = is_compute_partition(result.driver, kind, attributes)
        gpu = parent_gpu(*key, attributes) if partitioned else ""
        return HeldDevice(
            claim,
            result,
            node,
            device_id,
            kind,
            mode,
            basis,
            own_mode=own_mode,
            product=attributes.get("productName", ""),
            profile=attributes.get("profile", "")
            or (partition_profile(attributes) if result.driver == AMD_DRIVER else ""),
            parent=attributes.get("parentUUID", ""),
            gpu=gpu,
        )

    def sharing_config(self, claim: DraClaim, result: DraResult) -> DraConfig | None:
        """The opaque config that sets this device's sharing: as allocated (status), else the
        claim's own, else its request's device class's; a claim's config wins over a class's."""
        request = request_class(claim, result.request)
        candidates = list(claim.allocation_config) or [
            *claim.config,
            *(self.classes[request].config if request in self.classes else ()),
        ]
        applicable = [
            c
            for c in candidates
            if c.driver == result.driver
            and c.sharing
            and (not c.requests or result.request in c.requests or _parent(result) in c.requests)
        ]
        claims_own = [c for c in applicable if c.source == "claim"]
        return (claims_own or applicable or [None])[-1]  # type: ignore[list-item]  # None: no config

    def mode(self, claim: DraClaim, result: DraResult, kind: str) -> tuple[str, str]:
        own = (claim.namespace, claim.name)
        key = (result.driver, result.pool, result.device)
        if is_admin(claim, result):
            return "time_slicing", "DRA adminAccess: reaches the device alongside its holders"
        admins = self.admins.get(key, set()) - {own}
        # A tenant's (or an unowned namespace's) admin reach leaves no isolation, whatever the
        # holder's own config says: both sides are judged in one mode so they meet. The holder
        # did not choose it (own_mode keeps what it did: SHARE-004 asks the reacher only).
        # Counted, not named: the basis is shown to this claim's tenant, the reacher may be
        # another tenant's (DRA-001 names it to its own tenant).
        reachers = self._reachers(claim, result)
        if reachers:
            return "time_slicing", (
                f"DRA: reached by {len(reachers)} other claim(s) with adminAccess: no isolation"
            )
        mode, basis = self._own_mode(claim, result, kind)
        platform = sorted(f"{ns}/{name}" for ns, name in admins)
        if platform:
            basis += f" (also reached by the platform's adminAccess claim {', '.join(platform)})"
        return mode, basis

    def _reachers(self, claim: DraClaim, result: DraResult) -> list[str]:
        """Namespaces of the other claims reaching this claim's device by adminAccess, the
        platform's (monitoring) excepted."""
        key = (result.driver, result.pool, result.device)
        admins = self.admins.get(key, set()) - {(claim.namespace, claim.name)}
        return [ns for ns, _ in admins if ns not in self.platform]

    def _own_mode(self, claim: DraClaim, result: DraResult, kind: str) -> tuple[str, str]:
        """The mode of a device this claim holds without adminAccess: its sharing config, else
        shared when other non-admin claims hold it too, else its own instance or whole GPU.
        Claims sharing one device (consumable capacity) under different configs get no more
        isolation than the weakest: time-slicing for all, so every pair of them meets."""
        key = (result.driver, result.pool, result.device)
        own = (claim.namespace, claim.name)
        others = sorted(self.holders.get(key, set()) - self.admins.get(key, set()) - {own})
        config = self.sharing_config(claim, result)
        if config is not None:
            mode = SHARING_MODES.get(config.sharing.lower().replace("-", ""), "time_slicing")
            if any(self._configured_mode(o, key) != mode for o in others):
                return "time_slicing", (
                    f"DRA: the device is allocated to {len(others) + 1} claims not all "
                    f"configured for {config.sharing}"
                )
            where = "its device class" if config.source == "class" else "the claim"
            basis = f"DRA {config.kind or 'config'} of {where}: sharing {config.sharing}"
            if not others and (pod := _only_pod(claim)):
                # A claim generated for one pod serves no other: the config shares the device
                # among that pod's containers, one workload, as a whole device would.
                whole = "mig_gi" if kind == "mig" else "exclusive"
                return whole, f"{basis} among the containers of pod {pod} only"
            return mode, basis
        attributes = self._attributes(result)
        partitioned = is_compute_partition(result.driver, kind, attributes)
        if others and partitioned and is_auto_partition(attributes):
            # AMD auto-partition: the device is one GPU in a partition mode (cpx, dpx...) whose
            # `partitions` capacity each claim consumes one of: each claim a compute partition
            # of that one GPU (inventory.dra_amd), not one time-shared device.
            gpu = parent_gpu(*key, attributes)
            return "mig_ci", partition_basis(attributes, gpu, len(others) + 1)
        if others:
            return "time_slicing", f"DRA: the device is allocated to {len(others) + 1} claims"
        pods = [c for c in claim.reserved_for if c.startswith("pods/")]
        if len(pods) > 1:
            # Pods sharing one claim run on its device at once, with no config to isolate them.
            return "time_slicing", f"DRA: one claim in use by {len(pods)} pods at once"
        if kind == "mig":
            return "mig_gi", "DRA: a MIG device of its own"
        if partitioned:
            # AMD's compute partitions of one GPU share its memory under NPS1 and the rest of
            # it under any memory mode: compute instances of the GPU, as the device plugin's.
            return "mig_ci", partition_basis(attributes, parent_gpu(*key, attributes))
        return "exclusive", "DRA: a whole device allocated to this claim"

    def _attributes(self, result: DraResult) -> dict[str, str]:
        """The attributes the device's ResourceSlice publishes ({} where none does)."""
        _, device = self.devices.get((result.driver, result.pool, result.device), (None, None))
        return device.attributes if device else {}

    def _configured_mode(self, holder: tuple[str, str], key: tuple[str, str, str]) -> str | None:
        """The sharing mode another claim's config sets on the device `key`, None for none."""
        claim = self.claims[holder]
        for r in claim.results:
            if (r.driver, r.pool, r.device) == key:
                config = self.sharing_config(claim, r)
                if config is not None:
                    return SHARING_MODES.get(
                        config.sharing.lower().replace("-", ""), "time_slicing"
                    )
        return None

    def device_class_of(self, claim: DraClaim, result: DraResult) -> str:
        """The DeviceClass the claim's result was allocated from ("" where not stated)."""
        return request_class(claim, result.request)


def request_class(claim: DraClaim, request: str) -> str:
    """The device class a result was allocated from: its request's, or for a firstAvailable
    result ("<request>/<subrequest>") the alternative the scheduler chose, not the first."""
    top, _, sub = request.partition("/")
    for r in claim.requests:
        if r.name != top:
            continue
        if sub and sub in r.subrequests:
            return r.alternatives[r.subrequests.index(sub)]
        return r.device_class or (r.alternatives[0] if r.alternatives else "")
    return ""


def dra_device_id(driver: str, pool: str, device: str, attributes: dict[str, str]) -> str:
    """A DRA device's id: its UUID where the driver publishes one, else "dra:<driver>/<pool>/
    <device>" (HeldDevice.device_id)."""
    uuid = attributes.get("uuid", "")
    return uuid if uuid.startswith(("GPU-", "MIG-")) else f"dra:{driver}/{pool}/{device}"


def device_kind(driver: str, attributes: dict[str, str], device: str = "") -> str:
    """A DRA device's kind (GPU_TYPES), or "" when not a GPU device: its `type` attribute in
    its driver's words, else what the NVIDIA or AMD GPU driver's device name says."""
    kind = attributes.get("type", "").lower()
    kind = DEVICE_TYPES.get(kind, kind) if driver == AMD_DRIVER else kind
    if not kind and driver == NVIDIA_DRIVER:
        kind = "mig" if "-mig-" in device else "gpu"
    if not kind and driver == AMD_DRIVER and device:
        kind = "gpu"  # the driver publishes only GPUs, partitions and passthrough GPUs
    return kind if kind in GPU_TYPES else ""


def is_admin(claim: DraClaim, result: DraResult) -> bool:
    """A result reached by adminAccess: the result says so (1.32+), or its request asked."""
    top = _parent_name(result.request)
    return result.admin_access or any(r.admin_access for r in claim.requests if r.name == top)


def _only_pod(claim: DraClaim) -> str | None:
    """The one pod a claim generated from a template serves (Kubernetes makes one per pod and
    deletes it with the pod), unless another pod was let in by the claim's name."""
    if claim.owner_pod and set(claim.reserved_for) <= {f"pods/{claim.owner_pod}"}:
        return claim.owner_pod
    return None


def _parent(result: DraResult) -> str:
    return _parent_name(result.request)


def _parent_name(request: str) -> str:
    """A firstAvailable result names "<request>/<subrequest>"; config names the request."""
    return request.split("/", 1)[0]


def device_classes_used(requests: Iterable[DraRequest]) -> set[str]:
    """The device classes these requests ask for (every alternative of a firstAvailable)."""
    return {name for r in requests for name in (r.device_class, *r.alternatives) if name}


@dataclass(frozen=True)
class DraHeld:
    """What DRA claims in use by active pods hold: those pods, and the devices by id."""

    pods: frozenset[tuple[str, str]]
    devices: frozenset[str]


def dra_held(snapshot: ClusterSnapshot, pods: Iterable[Pod]) -> DraHeld:
    """GPU devices held by claims of these pods (telemetry: a busy GPU a claim explains is not
    hijacked). A MIG device also explains its parent GPU's samples: the exporter reports a MIG
    instance under its parent's UUID. An adminAccess result explains nothing: it reaches a
    device to watch or reset it (a monitoring agent's claim of allocationMode All reaches every
    GPU of the node), it does not allocate it for work."""
    if not snapshot.dra_claims:
        return DraHeld(frozenset(), frozenset())
    index = DraIndex(snapshot)
    holders: set[tuple[str, str]] = set()
    devices: set[str] = set()
    for pod in pods:
        held = [
            h
            for c in index.claims_of_pod(pod)
            for h in index.held_devices(c)
            if h.kind and not is_admin(c, h.result)
        ]
        if held:
            holders.add((pod.namespace, pod.name))
            devices |= {h.device_id for h in held} | {h.parent for h in held if h.parent}
    return DraHeld(frozenset(holders), frozenset(devices))


def dra_gpu_nodes(snapshot: ClusterSnapshot) -> set[str]:
    """Nodes whose ResourceSlices publish GPU or MIG devices (a DRA-only node may carry no GPU
    capacity or GFD labels at all)."""
    return {
        s.node_name
        for s in snapshot.dra_slices
        if s.node_name and any(device_kind(s.driver, d.attributes, d.name) for d in s.devices)
    }


def is_gpu_class(index: DraIndex, name: str) -> bool:
    """A device class of GPUs: its selectors name a GPU driver (gpu.nvidia.com, gpu.amd.com,
    gpu.intel.com), or, with no class to read, its name says GPU or MIG."""
    device_class = index.classes.get(name)
    if device_class is not None and device_class.drivers:
        return any(d.startswith("gpu.") for d in device_class.drivers)
    return "gpu" in name or "mig" in name


def gpu_classes_of_pod(index: DraIndex, pod: Pod) -> list[str]:
    """The GPU device classes a pod's claims ask for (a template's when its claim is not
    generated yet)."""
    if not pod.resource_claims:
        return []
    requests: list[DraRequest] = [r for c in index.claims_of_pod(pod) for r in c.requests]
    resolved = {c.owner_pod for c in index.claims_of_pod(pod)}
    for entry in pod.resource_claims:
        if entry.template and not entry.claim and pod.name not in resolved:
            template = index.templates.get((pod.namespace, entry.template))
            requests += template.requests if template else ()
    return sorted(c for c in device_classes_used(requests) if is_gpu_class(index, c))
