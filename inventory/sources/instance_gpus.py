"""Physical NVIDIA GPUs of a cloud instance type, from the node's well-known instance-type label.
PURE.

Where neither GPU Feature Discovery nor the cloud labels the GPU count (AKS labels only
`kubernetes.azure.com/accelerator: nvidia`; EKS managed node groups without Karpenter; GKE
Standard), the instance type still fixes it: an ND96amsr_A100_v4 has 8 GPUs whatever the device
plugin advertises. The count matters because the plugin's `nvidia.com/gpu` is not a GPU count on a
shared node: MIG's single strategy advertises each MIG instance, time-slicing each replica.

Only types whose GPU count the provider's own documentation fixes are listed (AWS "Accelerated
computing instances", Azure GPU VM sizes, Google Cloud's accelerator-optimized machine types);
types that take attachable GPUs (GCP N1) or GPUs of other vendors are not: unknown, never a guess.
"""

from __future__ import annotations

from collections.abc import Mapping

INSTANCE_TYPE = "node.kubernetes.io/instance-type"
BETA_INSTANCE_TYPE = "beta.kubernetes.io/instance-type"


def _family(sizes: Mapping[str, int], prefix: str) -> dict[str, int]:
    return {f"{prefix}{size}": count for size, count in sizes.items()}


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
    **_family(_EC2_G, "g5."),
    **_family(_EC2_G, "g6."),
    **_family(_EC2_G, "g6e."),
    **_family({k: v for k, v in _EC2_G.items() if k not in ("24xlarge", "48xlarge")}, "g4dn."),
    "g4dn.metal": 8,
    "p3.2xlarge": 1,
    "p3.8xlarge": 4,
    "p3.16xlarge": 8,
    "p3dn.24xlarge": 8,
    "p4d.24xlarge": 8,
    "p4de.24xlarge": 8,
    "p5.4xlarge": 1,
    "p5.48xlarge": 8,
    "p5e.48xlarge": 8,
    "p5en.48xlarge": 8,
    "p6-b200.48xlarge": 8,
}
_AZURE = {
    "standard_nc6s_v3": 1,
    "standard_nc12s_v3": 2,
    "standard_nc24s_v3": 4,
    "standard_nc24rs_v3": 4,
    "standard_nc4as_t4_v3": 1,
    "standard_nc8as_t4_v3": 1,
    "standard_nc16as_t4_v3": 1,
    "standard_nc64as_t4_v3": 4,
    "standard_nc24ads_a100_v4": 1,
    "standard_nc48ads_a100_v4": 2,
    "standard_nc96ads_a100_v4": 4,
    "standard_nc40ads_h100_v5": 1,
    "standard_nc80adis_h100_v5": 2,
    "standard_nd40rs_v2": 8,
    "standard_nd96asr_v4": 8,
    "standard_nd96amsr_a100_v4": 8,
    "standard_nd96isr_h100_v5": 8,
    "standard_nd96isr_h200_v5": 8,
}
_GCP = {
    **{f"a2-highgpu-{n}g": n for n in (1, 2, 4, 8)},
    **{f"a2-ultragpu-{n}g": n for n in (1, 2, 4, 8)},
    "a2-megagpu-16g": 16,
    **{f"a3-highgpu-{n}g": n for n in (1, 2, 4, 8)},
    "a3-megagpu-8g": 8,
    "a3-ultragpu-8g": 8,
    **{f"g2-standard-{n}": 1 for n in (4, 8, 12, 16, 32)},
    "g2-standard-24": 2,
    "g2-standard-48": 4,
    "g2-standard-96": 8,
}
INSTANCE_GPUS = {**_AWS, **_AZURE, **_GCP}  # lower-case instance type -> physical GPUs


def instance_type(labels: Mapping[str, str]) -> str:
    return (labels.get(INSTANCE_TYPE) or labels.get(BETA_INSTANCE_TYPE) or "").strip()


def instance_gpu_count(labels: Mapping[str, str]) -> int | None:
    """Physical GPUs of the node's instance type when the table knows it, else None."""
    return INSTANCE_GPUS.get(instance_type(labels).lower())
