"""Physical NVIDIA GPUs of a cloud instance type, from the node's well-known instance-type label.
PURE.

Where neither GPU Feature Discovery nor the cloud labels the GPU count (AKS labels only
`kubernetes.azure.com/accelerator: nvidia`; EKS managed node groups without Karpenter; GKE
Standard), the instance type still fixes it: an ND96amsr_A100_v4 has 8 GPUs whatever the device
plugin advertises. The count matters because the plugin's `nvidia.com/gpu` is not a GPU count on a
shared node: MIG's single strategy advertises each MIG instance, time-slicing each replica.

The instance type fixes the GPU model too (a Standard_NC24ads_A100_v4 has one A100 80GB), for
nodes no label names it on. Only types whose GPUs the provider's own documentation fixes are
listed (AWS "Accelerated computing instances", Azure GPU VM sizes, Google Cloud's
accelerator-optimized machine types); types that take attachable GPUs (GCP N1) or GPUs of other
vendors are not: unknown, never a guess.
"""

from __future__ import annotations

from collections.abc import Mapping

INSTANCE_TYPE = "node.kubernetes.io/instance-type"
BETA_INSTANCE_TYPE = "beta.kubernetes.io/instance-type"


def _family(sizes: Mapping[str, int], prefix: str, model: str) -> dict[str, tuple[int, str]]:
    return {f"{prefix}{size}": (count, model) for size, count in sizes.items()}


# Models as the rest of the product names them ("NVIDIA-" and the family, with the memory size
# where the family comes in two: the MIG profile tables need it; GKE_MODELS in cloud_labels.py).
T4, A10G, L4, L40S, V100 = "NVIDIA-T4", "NVIDIA-A10G", "NVIDIA-L4", "NVIDIA-L40S", "NVIDIA-V100"
A100_40, A100_80 = "NVIDIA-A100-40GB", "NVIDIA-A100-80GB"
H100_80, H100_NVL, H200 = "NVIDIA-H100-80GB", "NVIDIA-H100-NVL", "NVIDIA-H200-141GB"

# EC2: the g4dn/g5/g6/g6e families share their size -> GPU count layout.
_EC2_G = {
    "xlarge": 1,
    "2xlarge": 1,
    "4xlarge": 1,
    "8xlarge": 1,
    "16xlarge": 1,
    "12xlarge": 4,
    "24xlarge": 4,
    "48xlarge": 8,
}
_AWS = {
    **_family(_EC2_G, "g5.", A10G),
    **_family(_EC2_G, "g6.", L4),
    **_family(_EC2_G, "g6e.", L40S),
    **_family({k: v for k, v in _EC2_G.items() if k not in ("24xlarge", "48xlarge")}, "g4dn.", T4),
    "g4dn.metal": (8, T4),
    "p3.2xlarge": (1, V100),
    "p3.8xlarge": (4, V100),
    "p3.16xlarge": (8, V100),
    "p3dn.24xlarge": (8, V100),
    "p4d.24xlarge": (8, A100_40),
    "p4de.24xlarge": (8, A100_80),
    "p5.4xlarge": (1, H100_80),
    "p5.48xlarge": (8, H100_80),
    "p5e.48xlarge": (8, H200),
    "p5en.48xlarge": (8, H200),
    "p6-b200.48xlarge": (8, "NVIDIA-B200"),
}
_AZURE = {
    "standard_nc6s_v3": (1, V100),
    "standard_nc12s_v3": (2, V100),
    "standard_nc24s_v3": (4, V100),
    "standard_nc24rs_v3": (4, V100),
    "standard_nc4as_t4_v3": (1, T4),
    "standard_nc8as_t4_v3": (1, T4),
    "standard_nc16as_t4_v3": (1, T4),
    "standard_nc64as_t4_v3": (4, T4),
    # NC A100 v4: the A100 80GB PCIe; NC H100 v5: the H100 NVL (94 GB).
    "standard_nc24ads_a100_v4": (1, A100_80),
    "standard_nc48ads_a100_v4": (2, A100_80),
    "standard_nc96ads_a100_v4": (4, A100_80),
    "standard_nc40ads_h100_v5": (1, H100_NVL),
    "standard_nc80adis_h100_v5": (2, H100_NVL),
    "standard_nd40rs_v2": (8, V100),
    "standard_nd96asr_v4": (8, A100_40),
    "standard_nd96amsr_a100_v4": (8, A100_80),
    "standard_nd96isr_h100_v5": (8, H100_80),
    "standard_nd96isr_h200_v5": (8, H200),
}
_GCP = {
    **{f"a2-highgpu-{n}g": (n, A100_40) for n in (1, 2, 4, 8)},
    **{f"a2-ultragpu-{n}g": (n, A100_80) for n in (1, 2, 4, 8)},
    "a2-megagpu-16g": (16, A100_40),
    **{f"a3-highgpu-{n}g": (n, H100_80) for n in (1, 2, 4, 8)},
    "a3-megagpu-8g": (8, H100_80),
    "a3-ultragpu-8g": (8, H200),
    **{f"g2-standard-{n}": (1, L4) for n in (4, 8, 12, 16, 32)},
    "g2-standard-24": (2, L4),
    "g2-standard-48": (4, L4),
    "g2-standard-96": (8, L4),
}
# lower-case instance type -> (physical GPUs, their model)
INSTANCE_GPUS = {**_AWS, **_AZURE, **_GCP}


def instance_type(labels: Mapping[str, str]) -> str:
    return (labels.get(INSTANCE_TYPE) or labels.get(BETA_INSTANCE_TYPE) or "").strip()


def instance_gpu_count(labels: Mapping[str, str]) -> int | None:
    """Physical GPUs of the node's instance type when the table knows it, else None."""
    known = INSTANCE_GPUS.get(instance_type(labels).lower())
    return known[0] if known else None


def instance_gpu_model(labels: Mapping[str, str]) -> str | None:
    """The GPU model of the node's instance type when the table knows it, else None."""
    known = INSTANCE_GPUS.get(instance_type(labels).lower())
    return known[1] if known else None
