"""The DESIGN §2 sharing mode of a device-plugin resource on a node: the node's device-plugin
config (its SharedResource of that name), GFD's labels, the MIG layout. PURE.

The sharing checks judge each pod's holding by it (posture.rules.plugin_holdings), and the
holder record of sync history (inventory.holding_sets) keeps only the devices it gives whole.
"""

from __future__ import annotations

from inventory.snapshot import Node, SharedResource
from inventory.sources.node_kinds import (
    gfd_resource_sharing,
    guest_mig_backed_vgpu,
    mig_backed_vgpu,
    vm_device_kind,
)
from inventory.sources.node_sharing import mig_enabled
from tenants.policy import is_mig_resource, node_sharing_mode

# What a vGPU guest VM's device plugin hands out: its vGPUs, each a GPU to the guest.
GUEST_VGPU = "nvidia.com/gpu"


def shared_entry(node: Node, resource: str) -> SharedResource | None:
    return next((r for r in node.resource_sharing if r.name == resource), None)


def resource_mode(node: Node, resource: str, why_unknown: str = "") -> tuple[str, str]:
    """(DESIGN §2 mode, why) of a device-plugin resource on `node`."""
    vm = vm_device_kind(resource)
    if vm == "passthrough":
        return "exclusive", "a whole GPU passed through to the pod's VM (vfio-pci)"
    backed = mig_backed_vgpu(resource) if vm == "vgpu" else None
    if backed is not None:
        return mig_backed_mode(resource, *backed)
    if vm == "vgpu":
        # vGPUs of one type share physical GPUs under the host's vGPU scheduler, which the
        # API does not show: NVIDIA's default, best effort (DESIGN §2).
        return node_sharing_mode("vgpu", resource), (
            "a vGPU for the pod's VM: vGPUs share a physical GPU under the host's vGPU "
            "scheduler, not visible here, so best effort (NVIDIA's default)"
        )
    entry = shared_entry(node, resource)
    if entry is not None and entry.mode == "mps" and is_mig_resource(resource):
        return mps_on_mig(node, resource, entry, why_unknown)
    if entry is not None:
        # Replicas share whatever the devices turn out to be.
        return entry.mode, entry_basis(entry)
    if why_unknown:
        return "unknown", why_unknown
    replicated = replicated_mig(node, resource)
    if replicated is not None:
        return replicated
    if node.resource_sharing:
        rest = "mig" if mig_enabled(node.labels, node.gpu_capacity) else "none"
        mode = node_sharing_mode(rest, resource, mig_strategy=node.mig_strategy)
        replicated = ", ".join(r.name for r in node.resource_sharing)
        return mode, f"not replicated by the node's device-plugin config (it shares {replicated})"
    guest = guest_mig_backed_vgpu(node.labels) if node.sharing_strategy == "vgpu" else None
    if guest is not None and resource == GUEST_VGPU:
        # A vGPU guest VM: its GPUs are vGPUs of the type GFD names, shared with other VMs as
        # that type is (a MIG-backed one with its GPU instance to itself is no vGPU best effort).
        return mig_backed_mode(*guest, vm="this node's VM")
    return node_sharing_mode(node.sharing_strategy, resource, mig_strategy=node.mig_strategy), ""


def mig_backed_mode(
    resource: str, gpu: str, slices: int, own: bool, vm: str = "the pod's VM"
) -> tuple[str, str]:
    """(mode, why) of a MIG-backed vGPU: its own GPU instance (`mig_gi`) on a GPU that gives
    each such vGPU an instance to itself; else the instance may hold other VMs' vGPUs by
    time-slicing, which the type name does not say, so it is judged as vGPUs sharing a GPU
    under the host's scheduler (best effort unless known), saying the sharing is unknown."""
    name = resource.removeprefix("nvidia.com/")
    kind = f"a MIG-backed vGPU ({name}: {slices} GPU-instance slice(s))"
    if own:
        return "mig_gi", (
            f"{kind} for {vm}: on {gpu} each MIG-backed vGPU has a MIG GPU instance to "
            "itself (several vGPUs share one instance only on GPUs with time-sliced MIG-backed "
            "vGPU)"
        )
    return node_sharing_mode("vgpu", resource), (
        f"{kind} for {vm}: whether other VMs' vGPUs share its GPU instance by "
        f"time-slicing is unknown ({gpu} is not known to give each MIG-backed vGPU an instance "
        "to itself; the type name does not say), so it is judged as vGPUs sharing a GPU under "
        "the host's vGPU scheduler, best effort (NVIDIA's default)"
    )


def mps_on_mig(
    node: Node, resource: str, entry: SharedResource, why_unknown: str
) -> tuple[str, str]:
    """(mode, why) of a MIG resource a `sharing.mps` entry names. The NVIDIA device plugin
    shares no MIG device by MPS: MIG resources (`nvidia.com/mig-*`) exist only under
    `--mig-strategy=mixed`, and with an MPS config under it the plugin refuses to start
    ("using --mig-strategy=mixed is not supported with MPS", cmd/nvidia-device-plugin
    validateFlags). So no MPS server shares these devices: the pods hold MIG devices handed out
    before, by what the node says of them (GFD's label), else each its own instance."""
    refused = (
        f"the device-plugin config names {entry.source} under sharing.mps, which the NVIDIA "
        "device plugin refuses (MPS is not supported with --mig-strategy=mixed: the plugin "
        "does not start with this config), so these MIG devices are not shared by MPS"
    )
    if why_unknown:
        return "unknown", f"{refused}; {why_unknown}"
    gfd = None if resource.endswith(".shared") else replicated_mig(node, resource)
    if gfd is not None:
        return gfd[0], f"{refused}; {gfd[1]}"
    mode = node_sharing_mode("mig", resource, mig_strategy=node.mig_strategy)
    return mode, f"{refused}; each device its own MIG instance"


def replicated_mig(node: Node, resource: str) -> tuple[str, str] | None:
    """(mode, why) of a MIG resource by what the node says of it without a config entry for
    it: GFD's own `<resource>.sharing-strategy` label (DESIGN §7: the labels first; "none"
    keeps a MIG device its own instance whatever `nvidia.com/gpu.sharing-strategy` says), or
    a `.shared` name, which only a sharing config's renameByDefault gives (and the device
    plugin shares MIG devices by time-slicing only); None otherwise."""
    if not is_mig_resource(resource):
        return None
    gfd = gfd_resource_sharing(node.labels, resource)
    if gfd is not None:
        mode, replicas = gfd
        if mode == "none":
            # GFD says these MIG devices are not replicated, though a node-wide label may
            # time-slice nvidia.com/gpu: each is its own instance.
            mode = node_sharing_mode("mig", resource, mig_strategy=node.mig_strategy)
        each = f" ({replicas} replicas each)" if replicas and replicas > 1 else ""
        return mode, f"GFD label {resource}.sharing-strategy: {mode}{each}"
    if resource.endswith(".shared"):
        return "time_slicing", "a .shared MIG resource: only time-slicing renames one"
    return None


def entry_basis(entry: SharedResource) -> str:
    devices = ", ".join(entry.devices) if entry.devices else "all devices"
    replicas = f"{entry.replicas} replicas" if entry.replicas else "replicas"
    basis = f"{entry.name}: {entry.mode} ({replicas} each) of {entry.source} on {devices}"
    if entry.mixed:
        basis += "; whole devices are advertised under the same name, a pod may get either"
    return f"{basis}; {entry.note}" if entry.note else basis
