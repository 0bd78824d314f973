"""A node whose accelerators are all another vendor's, by its own facts. PURE.

NVIDIA's driver creates /dev/nvidia-caps (POD-005): a node that holds only AMD's, Intel's or
Gaudi's devices has none to reach. That is known only where the node itself says so, its
capacity or allocatable listing another vendor's accelerators (or their DRA driver's slices
publishing them) and nothing of NVIDIA's: no `nvidia.com/` GPU resource even at 0 (a plugin
that lost its devices), no GFD, GPU Operator, NFD (PCI vendor 10de) or cloud GPU label, no
NVIDIA driver seen, no pod run under NVIDIA's runtime. A node with no accelerator at all, or
with any such sign, is not one: its GPUs are NVIDIA's or unknown, and stay judged.
"""

from __future__ import annotations

from inventory.snapshot import Node
from inventory.sources.cloud_labels import cloud_gpu_model
from inventory.sources.node_kinds import says_nvidia_gpu

NV = "nvidia.com/"
# GFD's and the GPU Operator's label families (inventory.sources.gpu_signs).
_NVIDIA_LABEL_PREFIXES = (NV + "gpu", NV + "cuda.", NV + "mig.", NV + "vgpu")


def other_vendor_only(node: Node) -> bool:
    """Whether the node's accelerators are all another vendor's, nothing saying NVIDIA's."""
    others = any(n > 0 for n in node.accelerator_resources.values()) or any(
        n > 0 for n in node.dra_accelerators.values()
    )
    return others and not nvidia_signs(node)


def nvidia_signs(node: Node) -> list[str]:
    """What says the node may hold an NVIDIA GPU (empty: nothing does)."""
    signs = []
    if node.is_gpu_node or node.gpu_capacity:
        signs.append("NVIDIA GPU capacity or count")
    if says_nvidia_gpu(node.labels) or any(
        k.startswith(_NVIDIA_LABEL_PREFIXES) for k in node.labels
    ):
        signs.append("NVIDIA GPU labels")
    if cloud_gpu_model(node.labels)[0]:
        signs.append("a cloud GPU label")
    if node.driver_version or "driver" in node.deployed:
        signs.append("an NVIDIA driver")
    if node.nvidia_runtime:
        signs.append("pods under NVIDIA's runtime")
    return signs
