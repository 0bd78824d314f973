"""Facts read on a host (nvidia-smi): merged into a node the Kubernetes API describes, or the
whole node where the API does not list it. PURE."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from inventory import snapshot as snap
from inventory.components import HOST_ONLY
from inventory.sources.cloud_labels import cloud_gpu_model
from inventory.sources.instance_gpus import instance_gpu_model


def node_from_host_facts(name: str, facts: dict[str, Any]) -> snap.Node:
    """A node the Kubernetes API does not list, as its `nvidia-smi -q -x` describes it: GPUs,
    driver, CUDA, VBIOS and MIG mode. Nothing else is claimed: no labels, taints or pods, and
    the components nvidia-smi cannot show (toolkit, device plugin, operator) stay unknown."""
    count = int(facts.get("gpu_count") or 0) or None
    return snap.Node(
        name=name,
        gpu_model=facts.get("gpu_model") or None,
        gpu_count=count,
        gpu_count_basis=f"nvidia-smi on the host ({count} GPUs listed)" if count else "",
        driver_version=facts.get("driver_version") or None,
        driver_version_source="nvidia-smi" if facts.get("driver_version") else None,
        cuda_driver_version=facts.get("cuda_driver_version") or None,
        firmware_version=facts.get("firmware_version") or None,
        # MIG mode is the host's; which profiles and strategy the API would show is unknown.
        sharing_strategy="mig" if facts.get("mig_enabled") else "none",
        described_by=HOST_ONLY,
    )


def merge_host_facts(node: snap.Node, facts: dict[str, Any]) -> snap.Node:
    """The API's facts win where it has them (they are live); the host's fill the gaps
    (firmware always comes from the host: the API does not publish the VBIOS)."""
    updates: dict[str, Any] = {}
    if facts.get("firmware_version") and not node.firmware_version:
        updates["firmware_version"] = facts["firmware_version"]
    if facts.get("driver_version") and not node.driver_version:
        updates["driver_version"] = facts["driver_version"]
        updates["driver_version_source"] = "nvidia-smi"
    if facts.get("cuda_driver_version") and not node.cuda_driver_version:
        updates["cuda_driver_version"] = facts["cuda_driver_version"]
    if facts.get("gpu_model") and (not node.gpu_model or _model_from_instance_type(node)):
        updates["gpu_model"] = facts["gpu_model"]
    if facts.get("gpu_count") and node.gpu_count is None:
        updates["gpu_count"] = int(facts["gpu_count"])
        # In place of the reason it was unknown (a vGPU host's capacity counts vGPUs).
        updates["gpu_count_basis"] = f"nvidia-smi on the host ({updates['gpu_count']} GPUs listed)"
    return replace(node, **updates) if updates else node


def _model_from_instance_type(node: snap.Node) -> bool:
    """The node's model is only what its instance type implies (no GFD product, no cloud
    label): the host's own reading of the GPU ("NVIDIA A100 80GB PCIe") says more."""
    labels = node.labels
    return (
        not labels.get("nvidia.com/gpu.product")
        and cloud_gpu_model(labels)[0] is None
        and node.gpu_model == instance_gpu_model(labels)
    )
