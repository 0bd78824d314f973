"""Which extended resources are other vendors' accelerators, and which of them the vendor-neutral
checks judge as they judge an NVIDIA GPU. PURE.

NVIDIA's GPU resources are every `nvidia.com/` name but the Network Operator's NICs
(inventory.snapshot.pods). Other vendors' device plugins hand out whole devices (or hardware
partitions) under their own names. Who owns a pod holding one (TEN-001), which pool its node is
(POD-009, K8S-002), what bounds it (K8S-001), its egress and admission (K8S-007, K8S-009), its
identity (POD-010) and its request against its limit (POD-006) do not depend on the vendor:
those checks judge the JUDGED_ACCELERATORS too. NVIDIA's stack and telemetry (STACK-*, ATTR-*,
DRIFT-*) stay NVIDIA's: gpuposture cannot read another vendor's stack, so no finding there means
not looked at (the sync says so per node). Sharing that the node's own labels and capacity show
(an Intel card shared by sharedDevNum, AMD compute partitions: the helpers at the end) is judged
as NVIDIA's (posture.rules.vendor_holdings). POD-011 also reads AMD's and Habana's
visible-devices variables on their nodes (posture.rules.pod.vendor_visible_devices).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from inventory.snapshot.quantity import gpu_count, parse_quantity

# Other vendors' GPUs and Gaudi, as their device plugins advertise them, judged by the
# vendor-neutral checks:
# - AMD's device plugin: `amd.com/gpu` (a whole GPU, or a partition under the default `single`
#   naming strategy: a CPX/NPS4 MI300X node advertises amd.com/gpu=64); under `mixed` naming a
#   VF or PF handed to a VM is `amd.com/gpu_vf` / `amd.com/gpu_pf`, and a partition is named by
#   its mode (AMD_PARTITION_RESOURCE).
# - Intel's GPU plugin: `gpu.intel.com/i915` and `gpu.intel.com/xe` (one GPU each, by kernel
#   driver), and their `_monitoring` resources, which give a pod every Intel GPU of the node.
# - Intel Gaudi (Habana's device plugin): `habana.ai/gaudi`.
JUDGED_ACCELERATORS = (
    "amd.com/gpu",
    "amd.com/gpu_vf",
    "amd.com/gpu_pf",
    "gpu.intel.com/i915",
    "gpu.intel.com/i915_monitoring",
    "gpu.intel.com/xe",
    "gpu.intel.com/xe_monitoring",
    "habana.ai/gaudi",
)
# Accelerators that are no GPU, read (the sync names the nodes that have them) but not judged:
# AWS Inferentia/Trainium (Neuron) and Google TPUs sit outside DESIGN's GPU scope; moving a name
# up to JUDGED_ACCELERATORS is all it takes to judge it.
UNJUDGED_ACCELERATORS = (
    "aws.amazon.com/neuron",
    "aws.amazon.com/neuroncore",
    "aws.amazon.com/neurondevice",
    "google.com/tpu",
)
OTHER_ACCELERATORS = JUDGED_ACCELERATORS + UNJUDGED_ACCELERATORS

# AMD's device plugin under `resource_naming_strategy: mixed` names a partitioned GPU by its
# compute and memory partition mode (amd.com/cpx_nps4, amd.com/spx_nps1; ROCm/k8s-device-plugin
# docs, "Resource Naming Strategy").
AMD_PARTITION_RESOURCE = re.compile(r"amd\.com/[a-z]px_nps\d+")


def is_other_accelerator(name: str) -> bool:
    """Another vendor's accelerator resource (OTHER_ACCELERATORS, or an AMD partition mode)."""
    return name in OTHER_ACCELERATORS or bool(AMD_PARTITION_RESOURCE.fullmatch(name))


def is_judged_accelerator(name: str) -> bool:
    """Another vendor's accelerator the vendor-neutral checks judge as an NVIDIA GPU."""
    return name in JUDGED_ACCELERATORS or bool(AMD_PARTITION_RESOURCE.fullmatch(name))


def accelerator_counts(capacity: Mapping[str, object]) -> dict[str, int]:
    """The other vendors' accelerator resources a node's capacity lists with a count above 0
    (in any Quantity form, read as nvidia.com/gpu is: quantity.gpu_count), sorted by name."""
    found = {}
    for key in sorted(capacity, key=str):
        name, n = str(key), parse_quantity(capacity[key])
        if is_other_accelerator(name) and n is not None and n > 0:
            found[name] = gpu_count(n)
    return found


# Whose accelerators a resource name hands out, as the node pages and API name the vendor.
_VENDOR_PREFIXES = (
    ("amd.com/", "AMD"),
    ("gpu.intel.com/", "Intel"),
    ("habana.ai/", "Intel Gaudi"),
    ("aws.amazon.com/neuron", "AWS Neuron"),
    ("google.com/tpu", "Google TPU"),
)


def accelerator_vendor(name: str) -> str:
    """The vendor of another vendor's accelerator resource ("amd.com/gpu" -> "AMD"); the
    resource's domain for one no prefix names."""
    for prefix, vendor in _VENDOR_PREFIXES:
        if name.startswith(prefix):
            return vendor
    return name.split("/", 1)[0]


def accelerator_vendors(resources: Mapping[str, object]) -> list[str]:
    """The vendors of `resources` (resource -> count), each once, in resource-name order."""
    return list(dict.fromkeys(accelerator_vendor(name) for name in sorted(resources)))


def sharing_judged(name: str) -> bool:
    """Whether the co-tenancy checks judge the sharing of this resource's devices from the
    node's labels and capacity (posture.rules.vendor_holdings): Intel's sharedDevNum, AMD's
    compute partitions. Gaudi, a VF or PF handed to a VM, Neuron and TPU devices: not judged."""
    return (
        name in INTEL_SHARED_RESOURCES
        or name == "amd.com/gpu"
        or bool(AMD_PARTITION_RESOURCE.fullmatch(name))
    )


def not_inventoried(resources: Mapping[str, object]) -> str | None:
    """Why a node's other-vendor accelerators have no model, count or versions here: gpuposture
    reads NVIDIA's stack only; their sharing is judged where the labels and capacity show it
    (sharing_judged), and said not judged where not (None for a node with none)."""
    if not resources:
        return None
    vendors = " and ".join(accelerator_vendors(resources))
    judged = [name for name in sorted(resources) if sharing_judged(name)]
    unjudged = [name for name in sorted(resources) if not sharing_judged(name)]
    said = [
        f"not inventoried: the {vendors} stack is not read (driver, device plugin, firmware, "
        f"telemetry), so their model, physical count and versions are unknown and no "
        f"{vendors} bulletin is judged"
    ]
    if judged:
        said.append(
            f"the sharing of {', '.join(judged)} between tenants is judged from the node's "
            "labels and capacity (Intel sharedDevNum, AMD compute partitions)"
        )
    if unjudged:
        said.append(f"the sharing of {', '.join(unjudged)} is not judged")
    return "; ".join(said)


# Other vendors' DRA drivers, as their ResourceSlices name them (Node.dra_accelerators).
DRA_DRIVER_VENDORS = {"gpu.amd.com": "AMD", "gpu.intel.com": "Intel"}


def dra_vendors(drivers: Mapping[str, object]) -> list[str]:
    """The vendors of other vendors' DRA drivers (driver -> devices), each once."""
    return list(dict.fromkeys(DRA_DRIVER_VENDORS.get(d, d) for d in sorted(drivers)))


def dra_not_inventoried(drivers: Mapping[str, object]) -> str | None:
    """Why the GPUs other vendors' DRA drivers publish for a node have no model, count or
    versions here, and how their sharing is judged: per device, from the ResourceClaims that
    hold them (posture.rules.dra_holdings), never as a node strategy. None without any."""
    if not drivers:
        return None
    vendors = " and ".join(dra_vendors(drivers))
    published = ", ".join(f"{d}: {n} device(s)" for d, n in sorted(drivers.items()))
    return (
        f"not inventoried: the {vendors} stack is not read (driver, DRA driver, firmware, "
        f"telemetry), so their model, physical count and versions are unknown and no {vendors} "
        f"bulletin is judged; the sharing of the GPUs their DRA driver publishes ({published}) "
        "is judged per device from the ResourceClaims that hold them (SHARE-001, SHARE-002, "
        "SHARE-003, LEAK-002), not read as a node sharing strategy"
    )


# --- how another vendor's device plugin shares one physical device ---------------------------
# Intel's GPU plugin: `sharedDevNum` N advertises N of `gpu.intel.com/i915` (or `xe`) per card,
# handed to N pods that time-share the card. NFD's Intel GPU rules count the cards
# (`gpu.intel.com/device-id.<class>-<device>.count`); the plugin's labeller names them
# (`gpu.intel.com/cards: card0.card1`).
INTEL_SHARED_RESOURCES = ("gpu.intel.com/i915", "gpu.intel.com/xe")
_INTEL_DEVICE_COUNT = re.compile(r"gpu\.intel\.com/device-id\.[0-9a-f]{4}-[0-9a-f]{4}\.count")
# AMD's MI300-series compute partitioning (SPX whole, DPX/QPX/CPX 2/4/8 partitions per GPU). The
# node labeller (ROCm/k8s-device-plugin, run with -compute-memory-partition, as the AMD GPU
# Operator does for partitioned nodes) writes both modes in one label, "<compute>_<memory>"
# ("cpx_nps4"), only where every GPU of the node is alike; beta.amd.com/ under its experimental
# prefix. The separate compute and memory labels below are read too.
AMD_COMBINED_PARTITION_LABELS = (
    "amd.com/compute-memory-partition",
    "beta.amd.com/compute-memory-partition",
)
AMD_COMPUTE_PARTITION_LABELS = (
    "amd.com/compute-partitioning-mode",
    "amd.com/gpu.compute-partitioning-mode",
    "amd.com/gpu.compute-partitioning",
)
AMD_MEMORY_PARTITION_LABELS = (
    "amd.com/memory-partitioning-mode",
    "amd.com/gpu.memory-partitioning-mode",
    "amd.com/gpu.memory-partitioning",
)


def intel_gpu_cards(labels: Mapping[str, str]) -> int | None:
    """The Intel GPU cards of a node by its labels (NFD's device-id counts, else the cards the
    plugin's labeller names); None where no label says."""
    counts = [str(v).strip() for k, v in labels.items() if _INTEL_DEVICE_COUNT.fullmatch(k)]
    if counts and all(c.isdigit() for c in counts):
        return sum(int(c) for c in counts) or None
    cards = [c for c in str(labels.get("gpu.intel.com/cards", "")).split(".") if c.strip()]
    return len(cards) or None


def amd_partitioning(labels: Mapping[str, str]) -> tuple[str, str | None] | None:
    """(compute mode, memory mode or None) of an AMD node whose GPUs are split into compute
    partitions (a mode other than SPX); None for whole GPUs or where no label says."""
    compute = next((labels[k] for k in AMD_COMPUTE_PARTITION_LABELS if labels.get(k)), "")
    memory = next((labels[k] for k in AMD_MEMORY_PARTITION_LABELS if labels.get(k)), None)
    combined = next((labels[k] for k in AMD_COMBINED_PARTITION_LABELS if labels.get(k)), "")
    if combined and not compute:
        compute, _, both_memory = str(combined).strip().partition("_")
        memory = memory or both_memory or None
    if compute.strip().upper() in ("", "SPX"):
        return None
    return compute.strip().upper(), memory.strip().upper() if memory else None
