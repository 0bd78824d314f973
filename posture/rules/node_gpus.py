"""How many GPUs a node's finding spans: its exposure (DESIGN §6, docs/scoring.md). PURE.

A node whose GPU count is known (GFD's `nvidia.com/gpu.count`, a cloud label, the DRA driver's
slices, an nvidia-smi import) spans that many. A node whose count is unknown (no GFD) must not
weigh as one GPU when the snapshot proves more: a critical container escape on a node whose
pods hold 8 GPUs would rank its tenant below one with a high finding on a known 8-GPU node.
There it spans the best lower bound the snapshot proves, and says which (`basis`):
- the GPUs its active pods hold: whole GPUs held alone (a device-plugin resource the node does
  not share, a DRA device, another vendor's whole accelerator) each count, devices of a shared
  pool count as the fewest GPUs that could carry them (replicas per GPU where the node's
  config says, at most 7 MIG devices per GPU; one where nothing says how many share a GPU);
- the GPUs its capacity advertises, counted the same way (time-slicing multiplies
  `nvidia.com/gpu`, so a time-sliced node's capacity is divided by its replicas, or counts one
  where they are unknown);
- the larger of the two, and 1 where neither shows a GPU (what is held is never undercounted).
Nothing here is an upper bound: a guess would inflate a tenant's risk as surely as 1 shrank it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from inventory.resource_modes import resource_mode, shared_entry
from inventory.snapshot import Node
from inventory.snapshot.accelerators import (
    INTEL_SHARED_RESOURCES,
    intel_gpu_cards,
    is_judged_accelerator,
)
from posture.inputs import PostureInputs
from posture.rules.common import gpu_holdings
from posture.rules.holding import GpuHolding
from posture.rules.plugin_holdings import holds_device
from posture.rules.vendor_holdings import vendor_holdings, vendor_sharing

# At most 7 MIG devices on one GPU (seven compute slices on every MIG GPU so far), and at most
# 7 // g GPU instances of a "<g>g" profile.
MIG_SLICES = 7
_GI_SLICES = re.compile(r"^nvidia\.com/mig-(\d+)g\.")
# Other vendors' resources whose one device is not a whole accelerator: an SR-IOV VF is a slice
# of a GPU, a `_monitoring` resource reaches every Intel GPU of the node without holding one.
_NOT_WHOLE = ("amd.com/gpu_vf", "gpu.intel.com/i915_monitoring", "gpu.intel.com/xe_monitoring")
GPU_UUID = "GPU-"
UNKNOWN = "its GPU count is unknown"
AT_LEAST = f"{UNKNOWN}, and it has at least these"


@dataclass(frozen=True)
class NodeGpus:
    """The GPUs a node's finding spans, and, where the node's count is unknown, why that many."""

    count: int
    basis: str = ""  # "" where the node's GPU count is known (or it is no GPU node)


def node_gpus(inputs: PostureInputs, node: Node) -> NodeGpus:
    """The node's GPUs as a finding on it spans them (at least 1: the node spans itself). Once
    per node and evaluation: every node check asks."""
    key = ("node_gpus", node.name)
    if key not in inputs.memo:
        inputs.memo[key] = _node_gpus(inputs, node)
    return inputs.memo[key]  # type: ignore[return-value]  # memo[key] holds what this function stored under it


def _node_gpus(inputs: PostureInputs, node: Node) -> NodeGpus:
    if node.gpu_count is not None:
        return NodeGpus(max(1, node.gpu_count))
    if node.is_gpu_node:  # NVIDIA's: its count is NVIDIA's, as the node's gpu_count is
        holdings = gpu_holdings(inputs, node)
        capacity = _capacity_gpus(
            {name: n for name, n in node.gpu_capacity.items() if holds_device(node, name)},
            lambda name: _nvidia_per_gpu(node, name, resource_mode(node, name)[0]),
        )
    else:
        holdings = _vendor_whole(inputs, node) + vendor_holdings(inputs, node)
        capacity = _capacity_gpus(_vendor_capacity(node), lambda name: _vendor_per_gpu(node, name))
    held, resources = _held_gpus(node, holdings)
    if not held and not capacity[0]:
        if not node.is_accelerator_node and not node.gpu_signs:
            return NodeGpus(1)  # no GPU node: nothing unknown to say
        return NodeGpus(1, f"1: {UNKNOWN}, no pod holds a GPU there and its capacity lists none")
    if held >= capacity[0]:
        return NodeGpus(held, f"{_gpus(held)} held by pods on the node ({resources}): {AT_LEAST}")
    count, listed = capacity
    return NodeGpus(count, f"{_gpus(count)} in the node's capacity ({listed}): {AT_LEAST}")


def _gpus(n: int) -> str:
    return f"{n} GPU" if n == 1 else f"{n} GPUs"


def _held_gpus(node: Node, holdings: Iterable[GpuHolding]) -> tuple[int, str]:
    """The fewest GPUs the holdings take, and the resources they hold. Whole GPUs held alone
    are told apart by their device where the holding names it (a DRA claim several pods share
    is one device); a shared pool takes at least its devices over the most a GPU carries."""
    whole: set[str] = set()
    unnamed = 0
    shared: dict[str, set[str]] = {}
    shared_unnamed: dict[str, int] = {}
    per: dict[str, int | None] = {}
    reach = False  # a hold through NVIDIA_VISIBLE_DEVICES: at least one GPU, which not shown
    resources: dict[str, None] = {}
    for h in holdings:
        resources[_held_as(h)] = None
        if h.through_env:
            reach = True
        elif h.mode == "exclusive":
            if h.devices:
                whole.update(h.devices)
            else:
                unnamed += h.count
        else:
            if h.devices:
                shared.setdefault(h.pool, set()).update(h.devices)
            else:
                shared_unnamed[h.pool] = shared_unnamed.get(h.pool, 0) + h.count
            per[h.pool] = _per_gpu_of(node, h)
    # A GPU UUID names one physical GPU whatever the mode (HAMi's allocation, a DRA device):
    # the distinct ones a shared pool's holdings name are that many GPUs at least.
    uuids = {d for d in whole.union(*shared.values()) if d.startswith(GPU_UUID)}
    bounds = [len(whole) + unnamed, len(uuids), 1 if reach else 0]
    for pool in per:
        units = len(shared.get(pool, ())) + shared_unnamed.get(pool, 0)
        most = per[pool]
        bounds.append(math.ceil(units / most) if most else min(units, 1))
    return max(bounds), ", ".join(sorted(resources))


def _held_as(holding: GpuHolding) -> str:
    """How a holding is named in the basis: its resource, or the way it was got."""
    if holding.through_env:
        return "NVIDIA_VISIBLE_DEVICES"
    named = (
        f"DRA claims of {holding.pool}"
        if holding.resource.startswith("resourceclaim/")
        else holding.resource
    )
    return named if holding.mode == "exclusive" else f"{named}, shared"


def _per_gpu_of(node: Node, holding: GpuHolding) -> int | None:
    if holding.pool.startswith("amd.com/"):
        # AMD's DRA driver names a partition by the GPU it is on (dra_holdings.held_gpus).
        return 1 if holding.devices else _vendor_per_gpu(node, holding.pool)
    if holding.pool in node.accelerator_resources:
        return _vendor_per_gpu(node, holding.pool)
    return _nvidia_per_gpu(node, holding.resource, holding.mode)


def _nvidia_per_gpu(node: Node, resource: str, mode: str) -> int | None:
    """At most how many of `resource`'s devices one GPU carries in `mode`; None where not
    known (a vGPU, an unknown mode, replicas nothing states)."""
    if mode == "exclusive":
        return 1
    if resource.startswith("nvidia.com/mig") or mode in ("mig_gi", "mig_ci"):
        found = _GI_SLICES.match(resource)
        return MIG_SLICES // int(found.group(1)) if found and int(found.group(1)) else MIG_SLICES
    if mode in ("time_slicing", "mps"):
        entry = shared_entry(node, resource)
        replicas = (entry.replicas if entry else None) or node.time_slicing_replicas
        return replicas if replicas and replicas > 0 else None
    return None


def _capacity_gpus(
    capacity: dict[str, int], per_gpu: Callable[[str], int | None]
) -> tuple[int, str]:
    """The fewest GPUs the capacity's GPU resources take (the largest of their bounds: one
    physical GPU may stand behind several names), and how that was read."""
    best, said = 0, ""
    for name, count in sorted(capacity.items()):
        if count <= 0:
            continue
        most = per_gpu(name)
        gpus = math.ceil(count / most) if most else 1
        if gpus > best:
            each = "" if most == 1 else (f", at most {most} per GPU" if most else ", shared")
            best, said = gpus, f"{name}={count}{each}"
    return best, said


def _vendor_capacity(node: Node) -> dict[str, int]:
    return {
        name: n
        for name, n in node.accelerator_resources.items()
        if is_judged_accelerator(name) and name not in _NOT_WHOLE
    }


def _vendor_per_gpu(node: Node, resource: str) -> int | None:
    """At most how many of another vendor's devices one accelerator carries: 1 for a whole
    one; an Intel card shared by sharedDevNum where the cards are counted; None else."""
    if resource in _NOT_WHOLE:
        return None
    if resource in INTEL_SHARED_RESOURCES:
        cards = intel_gpu_cards(node.labels)
        count = node.accelerator_resources.get(resource, 0)
        return -(-count // cards) if cards else None  # sharedDevNum unknown: any number
    return None if resource in vendor_sharing(node) else 1


def _vendor_whole(inputs: PostureInputs, node: Node) -> list[GpuHolding]:
    """Active pods' holds on another vendor's whole accelerators of the node (vendor_holdings
    has the shared ones), as holdings of their own resource."""
    sharing = vendor_sharing(node)
    found = []
    for pod in inputs.pods_by_node.get(node.name, ()):
        for name, count in sorted(pod.other_accelerators.items()):
            if is_judged_accelerator(name) and name not in sharing:
                whole = name not in _NOT_WHOLE and name not in INTEL_SHARED_RESOURCES
                mode = "exclusive" if whole else "unknown"  # an Intel card's per-card count decides
                found.append(GpuHolding(pod, inputs.tenant_of_pod(pod), name, name, count, mode))
    return found
