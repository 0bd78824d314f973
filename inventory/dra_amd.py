"""AMD's DRA driver's compute partitions: which are, what one GPU's partitions share, and which
GPU a partition is on where the driver says (DESIGN §2). PURE.

ROCm/k8s-gpu-dra-driver (docs/driver-attributes.md) publishes a partition of a pre-partitioned
Instinct GPU as `type` amdgpu-partition with its `partitionProfile` ("cpx_nps1") and its parent
GPU's PCI address (`resource.kubernetes.io/pciBusID`, identical for every partition of one
GPU); with auto-partition, one device per GPU and mode (`gpu-0-cpx-nps1`: `computePartition`,
`memoryPartition`, `pciAddr`) whose `partitions` capacity each claim consumes one of, so every
claim on it holds a partition of that one GPU. The partitions of one GPU share its memory under
NPS1 and the rest of the GPU under any memory mode: compute instances of one GPU (`mig_ci`),
never separate instances, as the device plugin's partitions are (posture.rules.vendor_holdings).
SPX is the whole GPU.
"""

from __future__ import annotations

AMD_DRIVER = "gpu.amd.com"
WHOLE_MODE = "spx"


def compute_mode(attributes: dict[str, str]) -> str:
    """A device's compute partition mode ("cpx", "dpx", "spx"), "" where not published."""
    profile = attributes.get("partitionProfile", "").partition("_")[0]
    return (attributes.get("computePartition", "") or profile).lower()


def memory_mode(attributes: dict[str, str]) -> str:
    """A device's memory partition mode ("nps1", "nps4"), "" where not published."""
    profile = attributes.get("partitionProfile", "").partition("_")[2]
    return (attributes.get("memoryPartition", "") or profile).lower()


def is_auto_partition(attributes: dict[str, str]) -> bool:
    """An auto-partition device: one GPU in one mode, its partitions a consumable capacity."""
    return bool(attributes.get("computePartition"))


def is_compute_partition(driver: str, kind: str, attributes: dict[str, str]) -> bool:
    """A device of AMD's driver that is a compute partition of a GPU (a partition device, or an
    auto-partition device in a mode that splits its GPU); an SPX one is the whole GPU."""
    if driver != AMD_DRIVER or compute_mode(attributes) == WHOLE_MODE:
        return False
    return kind == "partition" or is_auto_partition(attributes)


def partition_profile(attributes: dict[str, str]) -> str:
    """The partition's profile as the device plugin names its resource ("cpx_nps1")."""
    if profile := attributes.get("partitionProfile", ""):
        return profile.lower()
    compute, memory = compute_mode(attributes), memory_mode(attributes)
    return f"{compute}_{memory}" if compute and memory else compute


def parent_gpu(driver: str, pool: str, device: str, attributes: dict[str, str]) -> str:
    """The GPU a compute partition is on, as a device id ("dra:<driver>/<pool>/gpu@<PCI
    address>"): its parent's PCI address where published; an auto-partition device is one
    GPU, itself; "" where nothing tells."""
    bus = attributes.get("pciBusID", "") or attributes.get("pciAddr", "")
    if bus:
        return f"dra:{driver}/{pool}/gpu@{bus.lower()}"
    if is_auto_partition(attributes):
        return f"dra:{driver}/{pool}/{device}"
    return ""


def partition_shares(memory: str) -> str:
    """What the partitions of one GPU share, by its memory partition mode ("NPS1", "" unknown)."""
    if memory.upper() == "NPS1":
        return "its memory (NPS1) and the rest of the GPU"
    return "the GPU outside their memory partitions (firmware, scheduler, interconnect)" + (
        "" if memory else "; memory partitioning unknown, so its memory too perhaps"
    )


def partition_basis(attributes: dict[str, str], gpu: str, claims: int = 1) -> str:
    """Why a held AMD compute partition is a compute instance of its GPU (`gpu`: parent_gpu)."""
    compute, memory = compute_mode(attributes).upper(), memory_mode(attributes).upper()
    mode = ", ".join(m for m in (compute, memory) if m) or "mode not published"
    if is_auto_partition(attributes):
        where = f"auto-partition: {claims} claim(s) each consume a partition of this one GPU"
    elif gpu:
        where = f"parent GPU {gpu.rpartition('@')[2]} (pciBusID)"
    else:
        where = "which physical GPU it is on is not published"
    return (
        f"DRA: an AMD GPU compute partition ({mode}); the partitions of one GPU share "
        f"{partition_shares(memory)}; {where}"
    )
