"""Who holds a GPU resource on a node and whether two parties' replicas must meet on one
device: what the co-tenancy checks (SHARE-001, -002, -003, -006, -007) share. Each reports
the pairs of parties that meet on a node (pairs.Meeting); pairs.pair_drafts files them
per pair and node pool."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from gpuposture.base.enums import SharingMode
from inventory.snapshot import Node, SharedResource
from inventory.sources.cloud_labels import gke_partitioned
from inventory.sources.node_kinds import mig_single_overrides, vm_device_kind
from posture.inputs import TrustClassInfo
from posture.rules.common import (
    GpuHolding,
    holding_evidence,
)
from posture.rules.holding import EVERY_GPU, device_kind
from posture.rules.pairs import Party, unclassified_party
from posture.rules.subjects import PLATFORM_PARTY
from posture.rules.vendor_holdings import vendor_units
from tenants.mapping import UNCLASSIFIED
from tenants.policy import base_resource, is_mig_resource

# Modes in which one physical GPU (or MIG device) serves several pods at once. exclusive and
# mig_gi give each pod its own device or hardware partition, so there is no pair to judge: the
# modes from mig_ci on.
CONCURRENT_MODES = SharingMode.values()[SharingMode.rank(SharingMode.MIG_CI) :]


def physical_units(node: Node, pool: str) -> int | None:
    """How many physical devices back a pool: those the node's sharing config replicates under
    it, else GPUs from nvidia.com/gpu.count (capacity is multiplied by the replicas), MIG
    devices from the capacity divided by the replicas; another vendor's (vendor_units)."""
    if (vendor := vendor_units(node, pool)) is not None:
        return vendor[0]
    entry = _replicated(node, pool)
    if entry is not None and entry.units:
        return entry.units
    if vm_device_kind(pool) == "vgpu":
        return None  # the capacity counts vGPUs; how many GPUs carry them is not shown
    # Under GFD's MIG single strategy nvidia.com/gpu are MIG devices, not the node's GPUs.
    whole = not gke_partitioned(node.labels) and not mig_single_overrides(node.labels)
    if pool == "nvidia.com/gpu" and node.container_gpus and whole:
        return node.container_gpus  # not the GPUs bound to vfio-pci for VMs beside them
    # GKE's time-shared MIG partitions: capacity = partitions x clients, so the devices shared
    # are the partitions (partitions per GPU x GPUs), below, never the GPUs themselves.
    capacity = node.gpu_capacity.get(pool, 0) + node.gpu_capacity.get(f"{pool}.shared", 0)
    replicas = _replicas(node, pool) or 1
    return capacity // replicas if capacity >= replicas else None


def _replicated(node: Node, pool: str) -> SharedResource | None:
    return next((r for r in node.resource_sharing if base_resource(r.name) == pool), None)


def _replicas(node: Node, pool: str) -> int | None:
    """Replicas per device of the pool: its own config entry's, else the node's label."""
    if (vendor := vendor_units(node, pool)) is not None:
        return vendor[1]
    entry = _replicated(node, pool)
    return (entry.replicas if entry else None) or node.time_slicing_replicas


def co_residence(node: Node, pool: str, own: int, others: int) -> tuple[str, str]:
    """("certain" | "possible", why) for one party's replicas sharing a device with others'.

    Pigeonhole: kept apart, the party needs ceil(own/R) devices to itself and the others at
    least ceil(others/R); if that exceeds the devices there are, they must meet on one.
    """
    units = physical_units(node, pool)
    per_unit = _replicas(node, pool)
    gke_mig = pool == "nvidia.com/gpu" and gke_partitioned(node.labels)
    kind = "MIG partition" if gke_mig else "MIG device" if is_mig_resource(pool) else "physical GPU"
    if units == 1:
        return "certain", f"node {node.name} has a single {kind} behind {pool}"
    if units is None:
        return "possible", f"the number of {kind}s behind {pool} on {node.name} is unknown"
    if not per_unit:
        return "possible", f"replicas per {kind} unknown; {units} {kind}s on {node.name}"
    needed = math.ceil(own / per_unit) + math.ceil(others / per_unit)
    if needed > units:
        return "certain", (
            f"{own} + {others} replicas at {per_unit} per {kind} need {needed} {kind}s to stay "
            f"apart; {node.name} has {units}"
        )
    apart = "; on different partitions they are apart as MIG instances (mig_gi)" if gke_mig else ""
    return "possible", (
        f"{own} + {others} replicas at {per_unit} per {kind} fit on {units} {kind}s without "
        f"mixing, but the device plugin does not keep tenants apart{apart}"
    )


def node_facts(node: Node) -> dict[str, Any]:
    """What a co-tenancy's entry for one node shows about how that node shares its GPUs."""
    facts = {
        "gpu_model": node.gpu_model,
        "gpu_count": node.gpu_count,
        # Where a sandbox node's count comes from, or why it is unknown (a vGPU host's).
        **({"gpu_count_basis": node.gpu_count_basis} if node.gpu_count_basis else {}),
        "node_sharing_strategy": node.sharing_strategy,
        "time_slicing_replicas": node.time_slicing_replicas,
        "device_plugin_config": config_in_force(node),
        "mig_strategy": node.mig_strategy,
        "mig_config": node.mig_config,
    }
    if node.accelerator_resources or node.dra_accelerators:  # another vendor's GPUs
        if node.accelerator_resources:  # its device plugin's (share.vendor_holdings)
            facts["accelerator_resources"] = dict(node.accelerator_resources)
        if node.dra_accelerators:  # its DRA driver's (dra_holdings)
            facts["dra_accelerators"] = dict(node.dra_accelerators)
        if not node.is_gpu_node:
            facts["node_sharing_strategy"] = None  # no NVIDIA GPU: none was read, not "none"
    return facts


def config_in_force(node: Node) -> str | None:
    """The device-plugin config in force on the node as the sync recorded it (`ns/map:key`,
    None for none): a plugin with no config-manager reads its one mounted file and ignores the
    node's `nvidia.com/device-plugin.config` label, so a stale label names no config in use.
    A node stored before that was recorded: the key its label names."""
    if node.device_plugin_config_used is not None:
        return node.device_plugin_config_used or None
    return node.device_plugin_config


def parties_of(
    holdings: list[GpuHolding], platform: TrustClassInfo | None = None
) -> dict[str, Party]:
    """The parties holding these GPU devices, by name: each tenant, and with `platform` the
    pods no tenant owns as one party (PLATFORM_PARTY) judged by that class."""
    grouped: dict[str, tuple[TrustClassInfo, list[GpuHolding]]] = {}
    for h in holdings:
        if h.tenant is not None:
            grouped.setdefault(h.tenant.slug, (h.tenant.trust_class, []))[1].append(h)
        elif platform is not None:
            grouped.setdefault(PLATFORM_PARTY, (platform, []))[1].append(h)
    return {
        name: Party(
            name, cls.slug, tuple(holding_evidence(hs)), sum(h.count for h in hs), _devices(hs)
        )
        for name, (cls, hs) in sorted(grouped.items())
    }


def namespace_parties(holdings: list[GpuHolding]) -> dict[str, Party]:
    """The unclassified party split by namespace (unclassified_party names, sorted) where two
    or more namespaces no tenant claims hold these devices; else none. Nothing tells that two
    such namespaces have one owner, so they are judged as different parties (fail closed)."""
    grouped: dict[str, tuple[TrustClassInfo, list[GpuHolding]]] = {}
    for h in holdings:
        if (name := own_party(h)) is not None and h.tenant is not None:
            grouped.setdefault(name, (h.tenant.trust_class, []))[1].append(h)
    if len(grouped) < 2:
        return {}
    return {
        name: Party(
            name, cls.slug, tuple(holding_evidence(hs)), sum(h.count for h in hs), _devices(hs)
        )
        for name, (cls, hs) in sorted(grouped.items())
    }


def own_party(holding: GpuHolding) -> str | None:
    """The party of an unclassified pod's namespace (unclassified_party); None for others."""
    if holding.tenant is None or holding.tenant.slug != UNCLASSIFIED:
        return None
    return unclassified_party(holding.pod.namespace)


def _devices(holdings: list[GpuHolding]) -> tuple[str, ...] | None:
    if any(h.devices is None for h in holdings):
        return None
    return tuple(sorted({d for h in holdings for d in h.devices or ()}))


def shared_devices(first: Party, second: Party) -> tuple[str, ...] | None:
    """The devices both parties hold when the scheduler names every one of them by ids of one
    kind (then () means they are apart); None when that cannot be told."""
    if first.devices is None or second.devices is None:
        return None
    if len({device_kind(d) for d in (*first.devices, *second.devices)}) != 1:
        return None
    return tuple(sorted(set(first.devices) & set(second.devices)))


def pair_verdict(
    node: Node,
    first: Party,
    second: Party,
    everywhere: Callable[[Party], bool],
    residence: Callable[[int, int], tuple[str, str]],
) -> tuple[str, str] | None:
    """(co-residence, why) of two parties holding one pool of `node` (a pairs.Meeting's
    verdict and reason); None when the scheduler placed them on different devices.
    `everywhere`: reaches_every_gpu; `residence`: co_residence on the node's pool, of the two
    parties' replicas (both as the caller keeps them: a group asks them for many pairs)."""
    reaching = next((p for p in (first, second) if everywhere(p)), None)
    both = shared_devices(first, second)
    if both == () and reaching is None:
        return None
    if reaching is not None:
        who = reaching.name or "a platform pod"
        why = f"{who} reaches {EVERY_GPU} {node.name} through NVIDIA_VISIBLE_DEVICES=all"
        return "certain", why
    if both:
        return "certain", f"both hold {', '.join(both)} on {node.name}"
    return residence(first.replicas, second.replicas)


def reaches_every_gpu(party: Party) -> bool:
    """The party holds every GPU of the node through NVIDIA_VISIBLE_DEVICES=all."""
    return any(entry.get("reach") == EVERY_GPU for entry in party.pods)


def party_holds(holdings: list[GpuHolding], mode: str) -> dict[str, tuple[bool, bool]]:
    """party -> (holds through NVIDIA_VISIBLE_DEVICES, holds by `mode`), for may_meet."""
    found: dict[str, tuple[bool, bool]] = {}
    for h in holdings:
        # An unclassified pod also holds as its namespace's party (namespace_parties).
        for name in (party_name(h), own_party(h)):
            if name is not None:
                env, moded = found.get(name, (False, False))
                found[name] = (env or h.through_env, moded or h.mode == mode)
    return found


def may_meet(holds: dict[str, tuple[bool, bool]], first: str, second: str) -> bool:
    """Whether two parties of one pools_by_mode group share its GPUs by its mode (`holds`:
    party_holds of the group). A group that carries a hold through NVIDIA_VISIBLE_DEVICES
    also carries the pool's holdings of other modes (whole GPUs, MPS clients): the access
    meets each of them, but they do not meet one another by this mode. So one side must hold
    through the variable, or both by the mode."""
    mine = holds.get(first, (False, False))
    theirs = holds.get(second, (False, False))
    return mine[0] or theirs[0] or (mine[1] and theirs[1])


def party_name(holding: GpuHolding) -> str:
    return holding.tenant.slug if holding.tenant is not None else PLATFORM_PARTY
