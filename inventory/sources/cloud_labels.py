"""What managed clouds' node labels say about a node's GPUs where GPU Feature Discovery does not
run. PURE.

Google Kubernetes Engine does not run GFD: it labels a GPU node with the accelerator type
(`cloud.google.com/gke-accelerator`), the physical GPU count on Autopilot, its own GPU sharing
(`gke-gpu-sharing-strategy`, `gke-max-shared-clients-per-gpu`) and MIG partition size, and runs
its own device plugin that reads those labels (no NVIDIA device-plugin ConfigMap). Karpenter on
EKS labels the instance's GPU name, count and manufacturer, and EKS Auto Mode (a managed
Karpenter) writes the same labels under `eks.amazonaws.com/`; older EKS GPU AMIs label
`k8s.amazonaws.com/accelerator`. AKS's `kubernetes.azure.com/accelerator: nvidia` names the
vendor only, so it gives no model and is not read.

GFD's labels always come first (nodes.py); these fill what GFD leaves unsaid. A model value we
do not know is kept as written (visible) and never mapped by guess. `gke-gpu-driver-version` is
a driver channel (`default`, `latest`), never a driver version: it is not read at all.
"""

from __future__ import annotations

from collections.abc import Mapping

from inventory.sources.instance_gpus import instance_gpu_count, instance_gpu_model
from inventory.sources.raw import as_int

GKE = "cloud.google.com/"
GKE_ACCELERATOR = GKE + "gke-accelerator"
GKE_ACCELERATOR_COUNT = GKE + "gke-accelerator-count"
GKE_SHARING = GKE + "gke-gpu-sharing-strategy"
GKE_MAX_CLIENTS = GKE + "gke-max-shared-clients-per-gpu"
GKE_PARTITION = GKE + "gke-gpu-partition-size"
KARPENTER_GPU_NAME = "karpenter.k8s.aws/instance-gpu-name"
KARPENTER_GPU_COUNT = "karpenter.k8s.aws/instance-gpu-count"
KARPENTER_GPU_MAKER = "karpenter.k8s.aws/instance-gpu-manufacturer"
# EKS Auto Mode's spelling of the same three labels (its nodes carry no karpenter.k8s.aws/ ones).
AUTO_GPU_NAME = "eks.amazonaws.com/instance-gpu-name"
AUTO_GPU_COUNT = "eks.amazonaws.com/instance-gpu-count"
AUTO_GPU_MAKER = "eks.amazonaws.com/instance-gpu-manufacturer"
EKS_ACCELERATOR = "k8s.amazonaws.com/accelerator"
NVIDIA_PLUGIN_CONFIG = "nvidia.com/device-plugin.config"

# GKE's sharing label value -> DESIGN §2 mode (the only two values GKE writes).
GKE_SHARING_MODES = {"time-sharing": "time_slicing", "mps": "mps"}

# GKE accelerator type -> the model as the rest of the product reads it: "NVIDIA-" and the
# family token (bulletin firmware lines and LEAK-002 match whole tokens), with the memory size
# where one family comes in two (the MIG profile tables need it). GKE's documentation names
# each type's GPU; nvidia-tesla-a100 is the 40 GB A100, A3 Mega's GPU is the H100 80 GB.
GKE_MODELS = {
    "nvidia-tesla-k80": "NVIDIA-K80",
    "nvidia-tesla-p4": "NVIDIA-P4",
    "nvidia-tesla-p100": "NVIDIA-P100",
    "nvidia-tesla-v100": "NVIDIA-V100",
    "nvidia-tesla-t4": "NVIDIA-T4",
    "nvidia-l4": "NVIDIA-L4",
    "nvidia-tesla-a100": "NVIDIA-A100-40GB",
    "nvidia-a100-80gb": "NVIDIA-A100-80GB",
    "nvidia-h100-80gb": "NVIDIA-H100-80GB",
    "nvidia-h100-mega-80gb": "NVIDIA-H100-80GB",
    "nvidia-h200-141gb": "NVIDIA-H200-141GB",
    "nvidia-b200": "NVIDIA-B200",
    "nvidia-gb200": "NVIDIA-GB200",
    "nvidia-rtx-pro-6000": "NVIDIA-RTX-PRO-6000",
}
# Karpenter's GPU names (EC2's, lower-cased) of NVIDIA GPUs. "a100" stays without a memory size:
# EC2 offers both the 40 GB and the 80 GB part, so the MIG tables must not pick one.
KARPENTER_NVIDIA = ("a100", "a10g", "h100", "h200", "b200", "l4", "l40s", "t4", "t4g", "v100")
# EKS GPU AMIs: "nvidia-tesla-<family>" (older), "nvidia-<family>" (e.g. nvidia-a10g on g5) with
# one of KARPENTER_NVIDIA's families.
EKS_NVIDIA = ("k80", "m60", "t4", "v100", "a100")


def _karpenter(labels: Mapping[str, str], karpenter: str, auto: str) -> tuple[str, str]:
    """(label, value) of one of Karpenter's instance-gpu labels, else of its Auto Mode
    spelling; the value "" when neither is set."""
    for label in (karpenter, auto):
        value = str(labels.get(label, "")).strip()
        if value:
            return label, value
    return karpenter, ""


def karpenter_other_vendor(labels: Mapping[str, str]) -> bool:
    """Karpenter names another GPU maker than NVIDIA (`amd` on g4ad instances)."""
    maker = _karpenter(labels, KARPENTER_GPU_MAKER, AUTO_GPU_MAKER)[1].lower()
    return bool(maker) and maker != "nvidia"


def cloud_gpu_model(labels: Mapping[str, str]) -> tuple[str | None, str | None]:
    """(model, the label it came from) from a managed cloud's labels; (None, None) if none."""
    gke = labels.get(GKE_ACCELERATOR, "").strip()
    if gke:
        return GKE_MODELS.get(gke.lower(), gke), GKE_ACCELERATOR
    label, name = _karpenter(labels, KARPENTER_GPU_NAME, AUTO_GPU_NAME)
    if name and not karpenter_other_vendor(labels):
        maker = _karpenter(labels, KARPENTER_GPU_MAKER, AUTO_GPU_MAKER)[1]
        known = maker.lower() == "nvidia" and name.lower() in KARPENTER_NVIDIA
        return (f"NVIDIA-{name.upper()}" if known else name), label
    eks = labels.get(EKS_ACCELERATOR, "").strip()
    if eks:
        return _eks_model(eks), EKS_ACCELERATOR
    return None, None


def cloud_or_instance_model(labels: Mapping[str, str]) -> str | None:
    """The GPU model from the cloud's label, else the instance type's (None: neither names one).
    The cloud's label comes first, but it names a family where one comes in two memory sizes
    (EKS `nvidia-tesla-a100` and Karpenter `a100` are the A100 on both p4d and p4de): where the
    instance type fixes the more specific model of that same family (p4d.24xlarge: the A100
    40GB), that is taken, since the MIG profile tables need the size. A different family is
    never taken over the label (the label is what runs; the type table may be wrong)."""
    cloud = cloud_gpu_model(labels)[0]
    instance = instance_gpu_model(labels)
    if cloud and instance and instance.startswith(f"{cloud}-"):
        return instance
    return cloud or instance


def _eks_model(value: str) -> str:
    """`nvidia-tesla-v100` -> NVIDIA-V100, `nvidia-a10g` -> NVIDIA-A10G (as GFD and Karpenter
    name it); a value naming no NVIDIA GPU we know is kept as written."""
    lower = value.lower()
    if lower.startswith("nvidia-tesla-"):
        family = lower.removeprefix("nvidia-tesla-")
        known = family in EKS_NVIDIA
    else:
        family = lower.removeprefix("nvidia-")
        known = lower.startswith("nvidia-") and family in KARPENTER_NVIDIA
    return f"NVIDIA-{family.upper()}" if known else value


def cloud_gpu_count(labels: Mapping[str, str]) -> int | None:
    """Physical GPUs as the cloud labels them (GKE Autopilot, Karpenter, EKS Auto Mode), else as
    the node's instance type fixes them (instance_gpus.py), else None."""
    for label in (GKE_ACCELERATOR_COUNT, KARPENTER_GPU_COUNT, AUTO_GPU_COUNT):
        if label != GKE_ACCELERATOR_COUNT and karpenter_other_vendor(labels):
            continue  # an AMD GPU instance (g4ad): not an NVIDIA GPU this product judges
        count = as_int(labels.get(label))
        if count is not None:
            return count
    return instance_gpu_count(labels)


def gke_sharing(labels: Mapping[str, str]) -> str | None:
    """GKE's own GPU sharing on the node: "time_slicing", "mps", "unknown" (a value GKE never
    writes: never read as unshared), or None when the label is absent."""
    value = labels.get(GKE_SHARING)
    if value is None:
        return None
    return GKE_SHARING_MODES.get(value.strip().lower(), "unknown")


def gke_clients_per_gpu(labels: Mapping[str, str]) -> int | None:
    """Containers that may share one GPU under GKE sharing (its `nvidia.com/gpu` capacity is
    physical GPUs times this), or None when absent or not a positive integer."""
    clients = as_int(labels.get(GKE_MAX_CLIENTS))
    return clients if clients and clients > 0 else None


def gke_physical_gpus(labels: Mapping[str, str], capacity: Mapping[str, int]) -> int | None:
    """Physical GPUs behind a GKE-shared node's `nvidia.com/gpu` capacity: capacity / clients
    when that divides exactly; None otherwise (the capacity of a shared node is never a count).
    On a partitioned node the quotient counts MIG instances, not GPUs: None too."""
    clients = gke_clients_per_gpu(labels)
    shared = capacity.get("nvidia.com/gpu")
    if gke_sharing(labels) not in ("time_slicing", "mps") or not clients or not shared:
        return None
    if gke_partitioned(labels):
        return None
    if shared % clients:
        return None
    return shared // clients


def gke_partition_size(labels: Mapping[str, str]) -> str | None:
    """The MIG profile GKE partitions the node's GPUs into (each instance advertised as
    nvidia.com/gpu), as written; None when GKE does not partition them."""
    return labels.get(GKE_PARTITION, "").strip() or None


def gke_partitioned(labels: Mapping[str, str]) -> bool:
    return gke_partition_size(labels) is not None


def gke_shares(labels: Mapping[str, str]) -> bool:
    """GKE's device plugin, not NVIDIA's, decides how the node shares its GPUs: GKE's sharing
    or partition label is set, and GFD states no sharing strategy and names no device-plugin
    config (with the GPU Operator on GKE, NVIDIA's plugin and GFD's labels decide)."""
    gke = GKE_SHARING in labels or gke_partitioned(labels)
    nvidia = any(k in labels for k in ("nvidia.com/gpu.sharing-strategy", NVIDIA_PLUGIN_CONFIG))
    return gke and not nvidia
