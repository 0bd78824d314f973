"""Which devices of each node pods hold whole, one tenant each, and who holds how many at a sync:
the holder sets sync history keeps (inventory.holdings, LEAK-001 without telemetry). PURE.

DESIGN §2: every path a GPU reaches a pod by feeds the leak check. Sync history counts the ones
that hand a tenant devices of its own, each set of interchangeable devices on its own:
- the node's whole GPUs (Devices.name WHOLE) on a node that hands them out whole (no sharing
  strategy, no replicated resource, a known GPU count, no HAMi share or KAI fraction): the
  device plugin's `nvidia.com/gpu`, a KubeVirt VM's passthrough GPUs, Koordinator's or qGPU's
  whole GPUs held alone (inventory.fractions.scheduler_whole_gpus, whole_gpus_alone), and a pod
  holding every GPU through an honoured NVIDIA_VISIBLE_DEVICES=all (inventory.env_holds), which
  holds all n;
- the node's GPU instances of one MIG profile (its resource: `nvidia.com/mig-7g.80gb`, or
  `nvidia.com/gpu` under the single strategy), where the node says each is a GPU instance of
  its own (inventory.resource_modes: `mig_gi`; not compute instances of a shared one, not
  replicated, and the layout known): a MIG instance keeps its memory from one tenant to the
  next as a whole GPU does. Several instances of a profile are counted as GPUs are (k of n);
- each DRA device a ResourceSlice publishes on the node (its UUID, or driver/pool/device): a
  set of one, since the claim's allocation names it; held by the namespace of each claim a
  Running pod uses, where the claim has it to itself (DraIndex's mode exclusive or mig_gi; a
  device two claims share, or time-sliced by its config, is left out). An honoured
  NVIDIA_VISIBLE_DEVICES=all holds each whole GPU the NVIDIA DRA driver publishes there.
Time-sliced, MPS-shared and fractional devices are left out on purpose: LEAK-001 judges
consecutive exclusive tenants; tenants on one shared GPU at once are the sharing checks'.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from inventory.dra_devices import NVIDIA_DRIVER, DraIndex, device_kind, dra_device_id, is_admin
from inventory.env_holds import (
    every_gpu_holders,
    may_set_visible_devices,
    node_envvar_access,
)
from inventory.fractions import (
    RESERVATION_NAMESPACES,
    hami_share,
    scheduler_whole_gpus,
    whole_gpus_alone,
)
from inventory.holdings import GPU_PREFIX, MIG_PREFIX, WHOLE, Devices, NodeIdentity
from inventory.mig_state import mig_layout_problem
from inventory.owners import OwnerIndex, workload_of
from inventory.resource_modes import resource_mode
from inventory.snapshot import ClusterSnapshot, Node, Pod, recorded_time
from inventory.sources.node_kinds import vm_device_kind

WHOLE_GPU = "nvidia.com/gpu"
EXCLUSIVE_MODES = ("exclusive", "mig_gi")
# The most GPU instances a GPU takes (seven compute slices on every MIG GPU so far).
MIG_SLICES = 7
_GI_SLICES = re.compile(r"^nvidia\.com/mig-(\d+)g\.")


@dataclass
class HolderSet:
    """One set of a node's devices at a sync: which, how many, and who holds how many."""

    devices: Devices
    count: int  # n
    holders: dict[str, int] = field(default_factory=dict)  # namespace -> devices held
    # A platform namespace -> the workloads of its pods that hold some (named by the handover
    # they stand between: inventory.holdings).
    workloads: dict[str, set[str]] = field(default_factory=dict)
    # The Node object the set was seen on (a name reused by a new VM is another machine).
    node: NodeIdentity = NodeIdentity()


Found = dict[tuple[str, str], HolderSet]  # (node, Devices.name) -> its set


def exclusive_holders(
    nodes: Iterable[Node],
    pods: Iterable[Pod],
    objects: ClusterSnapshot | None = None,
    platform: frozenset[str] = frozenset(),
    tenant_claimed: frozenset[str] = frozenset(),
) -> Found:
    """Every holder set of these nodes at this sync. `objects`: the snapshot's DRA objects,
    device-plugin configs, ClusterPolicies and env ConfigMaps (None: none); `platform`: the
    platform's namespaces no tenant claims (their pods set NVIDIA_VISIBLE_DEVICES by design);
    `tenant_claimed`: the namespaces tenants claim, whose pods never speak for the node's
    toolkit (env_holds.node_envvar_access)."""
    objects = objects or ClusterSnapshot()
    nodes = list(nodes)
    by_node: dict[str, list[Pod]] = {}
    for pod in pods:
        if pod.node_name and pod.is_active:
            by_node.setdefault(pod.node_name, []).append(pod)
    found: Found = {}
    for node in nodes:
        found.update(_plugin_sets(node, by_node.get(node.name, [])))
    index = DraIndex(objects, platform) if objects.dra_slices else None
    claimed: set[tuple[str, str]] = set()
    if index is not None:
        claimed = _dra_sets(found, index, objects, by_node)
    for node in nodes:
        pods = by_node.get(node.name, [])
        _env_holds(found, node, pods, objects, platform, claimed, tenant_claimed=tenant_claimed)
    _name_platform_holders(found, by_node, objects, platform, index)
    identities = {node.name: identity_of(node) for node in nodes}
    for (name, _), held in found.items():
        held.node = identities.get(name, NodeIdentity())
    return found


def identity_of(node: Node) -> NodeIdentity:
    """The Node object's uid and creation time, as sync history compares machines by them."""
    return NodeIdentity(node.uid, recorded_time(node.created))


def _name_platform_holders(
    found: Found,
    by_node: Mapping[str, list[Pod]],
    objects: ClusterSnapshot,
    platform: frozenset[str],
    index: DraIndex | None,
) -> None:
    """Name the workloads of the platform's pods that hold each set (its top controller as the
    snapshot's owner links show it, else its nearest owner): few pods, platform ones only."""
    owners: OwnerIndex | None = None
    for (node, name), held in found.items():
        for pod in by_node.get(node, []) if platform.intersection(held.holders) else ():
            if pod.namespace not in held.holders or pod.namespace not in platform:
                continue
            if not _holds(pod, name, index):
                continue
            owners = owners or OwnerIndex(objects.owners, objects.pods)
            held.workloads.setdefault(pod.namespace, set()).add(workload_of(pod, owners).name)


def _holds(pod: Pod, name: str, index: DraIndex | None) -> bool:
    """Whether this running pod holds devices of the set `name` (Devices.name) itself."""
    if pod.phase != "Running":
        return False
    if name == WHOLE:
        return bool(whole_gpus(pod.gpu_resources) or scheduler_whole_gpus(pod))
    if not name.startswith(MIG_PREFIX) and index is not None:
        return any(
            held.device_id == name
            for claim in index.claims_of_pod(pod)
            for held in index.held_devices(claim)
        )
    return bool(pod.gpu_resources.get(name))


def whole_gpus(resources: Mapping[str, int]) -> int:
    """The whole GPUs a pod holds: the device plugin's `nvidia.com/gpu`, and the GPUs the
    sandbox device plugin passes through whole to a KubeVirt VM (`nvidia.com/GA100_A100_...`,
    held by its virt-launcher pod), one each; never vGPUs, which share a GPU."""
    return sum(
        count
        for name, count in resources.items()
        if name == WHOLE_GPU or vm_device_kind(name) == "passthrough"
    )


def _plugin_sets(node: Node, pods: list[Pod]) -> Found:
    """The node's whole GPUs and its MIG profiles' instances, with the device-plugin holders of
    each; none on a node where HAMi shares or KAI fractions ride on its GPUs (their counts are
    not GPUs)."""
    # Koordinator's or qGPU's whole GPUs, held alone, are the node's GPUs passed whole.
    alone = whole_gpus_alone(pods, node.container_gpus)
    if not node.is_gpu_node or any(_fractional(pod, alone) for pod in pods):
        return {}
    sets: Found = {}
    # The GPUs pods get through the device plugin: not those bound to vfio-pci for VMs.
    gpus = node.container_gpus
    if node.sharing_strategy == "none" and not node.resource_sharing and gpus:
        sets[(node.name, WHOLE)] = HolderSet(Devices(), int(gpus))
    if mig_layout_problem(node) is None:
        for resource, n in sorted(node.gpu_capacity.items()):
            if n > 0 and resource_mode(node, resource)[0] == "mig_gi":
                devices = Devices(resource, per_gpu=_per_gpu(node, resource, n))
                sets[(node.name, resource)] = HolderSet(devices, n)
    for pod in pods:
        # Only a running pod surely holds its devices (a pending one may not be admitted yet).
        if pod.phase != "Running":
            continue
        for (_, name), held in sets.items():
            count = (
                whole_gpus(pod.gpu_resources) + (scheduler_whole_gpus(pod) or 0)
                if name == WHOLE
                else pod.gpu_resources.get(name)
            )
            if count:
                held.holders[pod.namespace] = held.holders.get(pod.namespace, 0) + count
    return sets


def _fractional(pod: Pod, whole_alone: bool) -> bool:
    """A pod whose GPU counts are shares, not GPUs: HAMi's or another sharing scheduler's
    (unless whole GPUs held alone), a KAI fraction or its reservation."""
    if bool(pod.gpu_fraction) or pod.namespace in RESERVATION_NAMESPACES:
        return True
    return hami_share(pod) and not (whole_alone and scheduler_whole_gpus(pod) is not None)


def _per_gpu(node: Node, resource: str, count: int) -> int:
    """At most how many of the node's instances of this MIG profile one GPU holds (so one GPU
    reset may clear that many): by its GPU-instance slices (the name's "<g>g", else GFD's
    `<resource>.slices.gi`), never more than there are; all of them where not known."""
    found = _GI_SLICES.match(resource)
    slices = found.group(1) if found else node.labels.get(f"{resource}.slices.gi", "")
    if not str(slices).isdigit() or int(slices) < 1:
        return count
    return max(1, min(count, MIG_SLICES // int(slices)))


def _dra_sets(
    found: Found, index: DraIndex, objects: ClusterSnapshot, by_node: Mapping[str, list[Pod]]
) -> set[tuple[str, str]]:
    """Add a set of one for each GPU device the slices publish on a node, with the namespaces of
    the claims that hold it alone; a device held otherwise (shared by claims, time-sliced) is
    left out. Returns the pods holding an NVIDIA GPU through a claim (counted here, not again
    through the variable)."""
    for slice_ in objects.dra_slices:
        for device in slice_.devices if slice_.node_name else ():
            if not device_kind(slice_.driver, device.attributes, device.name):
                continue
            if _partitioned(device.attributes):
                continue  # several claims get partitions of it: the device is not one tenant's
            name = dra_device_id(slice_.driver, slice_.pool, device.name, device.attributes)
            parent = device.attributes.get("parentUUID", "")
            gpu = name if name.startswith(GPU_PREFIX) else parent
            found[(str(slice_.node_name), name)] = HolderSet(Devices(name, gpu), 1)
    shared: set[tuple[str, str]] = set()
    claimed: set[tuple[str, str]] = set()
    for node, pods in by_node.items():
        for pod in pods:
            for claim in index.claims_of_pod(pod) if pod.phase == "Running" else ():
                for held in index.held_devices(claim):
                    if not held.kind or is_admin(claim, held.result):
                        continue  # an adminAccess claim reaches the device, it holds nothing
                    if held.result.driver == NVIDIA_DRIVER:
                        claimed.add((pod.namespace, pod.name))
                    key = (held.node or node, held.device_id)
                    if key not in found:
                        continue
                    if held.mode not in EXCLUSIVE_MODES:
                        shared.add(key)
                    found[key].holders[claim.namespace] = 1
    for key in shared:
        del found[key]
    return claimed


def _partitioned(attributes: Mapping[str, str]) -> bool:
    """An AMD GPU in a compute partition mode other than spx: each claim gets a partition of
    it (auto-partition), so who held which part sync history cannot tell."""
    return attributes.get("computePartition", "").lower() not in ("", "spx")


def _env_holds(
    found: Found,
    node: Node,
    pods: list[Pod],
    objects: ClusterSnapshot,
    platform: frozenset[str],
    claimed: set[tuple[str, str]],
    *,
    tenant_claimed: frozenset[str],
) -> None:
    """Count the node's pods holding every GPU through an honoured NVIDIA_VISIBLE_DEVICES=all:
    each GPU the NVIDIA DRA driver publishes there, else all of the node's whole GPUs."""
    dra_gpus = [
        held
        for (name, _), held in found.items()
        if name == node.name and held.devices.name.startswith(GPU_PREFIX)
    ]
    whole = found.get((node.name, WHOLE))
    targets = dra_gpus or ([whole] if whole is not None else [])
    if not targets:
        return
    if not any(may_set_visible_devices(pod) for pod in pods):
        return  # no pod sets it: the node's toolkit need not be judged
    access = node_envvar_access(
        node,
        pods,
        objects.sharing_configs,
        objects.gpu_operator_policies,
        tenant_claimed=tenant_claimed,
    )
    configmaps = {(c.namespace, c.name): c for c in objects.env_configmaps}
    holders = every_gpu_holders(
        pods, access, configmaps, platform=platform, claimed=frozenset(claimed)
    )
    for namespace in sorted(holders):
        for held in targets:
            # It holds them all: its own device-plugin GPUs among them, counted once.
            held.holders[namespace] = held.count
