"""Merge facts read on a host (nvidia-smi) into a node the Kubernetes API describes. PURE."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from inventory import snapshot as snap
from inventory.sources.cloud_labels import cloud_gpu_model
from inventory.sources.instance_gpus import instance_gpu_model


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
