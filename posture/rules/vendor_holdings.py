"""Other vendors' devices that pods of different tenants may hold on one physical GPU: what the
co-tenancy checks (SHARE-001, -003, -007 through share.groups) and LEAK-002 judge beside
NVIDIA's holdings. PURE.

Other vendors' device plugins mostly hand out whole devices (one tenant's each: nothing shared).
Two ways they do not, which the node's labels and capacity show:
- Intel's GPU plugin with `sharedDevNum` > 1 advertises several `gpu.intel.com/i915` (or `xe`)
  per card and hands them to as many pods, which time-share the card (`time_slicing`).
- An AMD MI300-series node in a compute-partitioning mode other than SPX (DPX, QPX, CPX)
  advertises each partition as an `amd.com/gpu` (default `single` naming) or under the mode's
  name (`amd.com/cpx_nps1`, `mixed` naming). The partitions of one GPU share its memory under
  NPS1 and its other state under any memory mode: compute instances of one GPU, not separate
  hardware instances (`mig_ci`, never `mig_gi`).
Neither the API nor the plugins say which physical GPU a pod's device is on, so a pair of
tenants on such a node may share one: certain only where the node has a single card.
"""

from __future__ import annotations

from inventory.dra_amd import partition_shares
from inventory.snapshot import Node
from inventory.snapshot.accelerators import (
    AMD_PARTITION_RESOURCE,
    INTEL_SHARED_RESOURCES,
    amd_partitioning,
    intel_gpu_cards,
)
from posture.inputs import PostureInputs
from posture.rules.holding import GpuHolding

AMD_GPU = "amd.com/gpu"


def vendor_sharing(node: Node) -> dict[str, tuple[str, str]]:
    """Resource -> (DESIGN §2 mode, why) of each other-vendor resource of the node whose
    devices are parts of a physical GPU other pods may hold too; none for whole devices."""
    found: dict[str, tuple[str, str]] = {}
    for name, count in sorted(node.accelerator_resources.items()):
        if name in INTEL_SHARED_RESOURCES:
            if shared := _intel_sharing(node, name, count):
                found[name] = ("time_slicing", shared)
        elif partitioned := amd_partition_basis(node, name):
            found[name] = ("mig_ci", partitioned)
    return found


def _intel_sharing(node: Node, resource: str, count: int) -> str:
    """Why pods holding `resource` time-share an Intel card, or "" where each holds its own."""
    cards = intel_gpu_cards(node.labels)
    if cards is None:
        # The plugin's default (sharedDevNum 1) gives each pod a card of its own, and nothing
        # here says otherwise: two tenants there are not called co-resident (no critical on
        # a guess). The node's sharing reads unknown where the checklist asks.
        return ""
    if count <= cards:
        return ""
    return (
        f"Intel GPU plugin sharedDevNum > 1: {count} {resource} on {cards} card(s) "
        f"({count // cards} pods per card) time-share each card, no memory or fault isolation"
    )


def amd_partition_basis(node: Node, resource: str = AMD_GPU) -> str:
    """Why a pod's `resource` on the node is a compute partition of a GPU other partitions
    share, or "" for a whole GPU."""
    if resource != AMD_GPU and not AMD_PARTITION_RESOURCE.fullmatch(resource):
        return ""
    if resource != AMD_GPU:
        compute, _, memory = resource.removeprefix("amd.com/").upper().partition("_")
        if compute == "SPX":
            return ""
        source = f"resource name {resource}"
    elif partitioned := amd_partitioning(node.labels):
        compute, memory = partitioned[0], partitioned[1] or ""
        source = f"node label compute partitioning {compute}" + (
            f", memory {memory}" if memory else ""
        )
    else:
        return ""
    return (
        f"AMD compute partition ({source}): the partitions of one GPU share "
        f"{partition_shares(memory)}; "
        "which physical GPU each pod's partition is on is not visible"
    )


def vendor_holdings(inputs: PostureInputs, node: Node) -> list[GpuHolding]:
    """Every active pod's holding of a resource vendor_sharing names on the node."""
    sharing = vendor_sharing(node)
    if not sharing:
        return []
    holdings = []
    for pod in inputs.pods_by_node.get(node.name, ()):
        if not pod.is_active:
            continue
        tenant = inputs.tenant_of_pod(pod)
        for name, count in sorted(pod.other_accelerators.items()):
            if name in sharing:
                mode, basis = sharing[name]
                holdings.append(GpuHolding(pod, tenant, name, name, count, mode, None, basis))
    return holdings


def vendor_units(node: Node, pool: str) -> tuple[int | None, int | None] | None:
    """(physical devices, pods per device) behind another vendor's shared pool, each None where
    unknown; None for a pool that is not another vendor's (share.parties reads NVIDIA's)."""
    if pool not in node.accelerator_resources:
        return None
    cards = intel_gpu_cards(node.labels) if pool in INTEL_SHARED_RESOURCES else None
    if cards is None:
        return None, None
    return cards, node.accelerator_resources[pool] // cards
