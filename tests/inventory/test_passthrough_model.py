"""A vm-passthrough node's GPU model, read from the PCI device name the GPU Operator's sandbox
device plugin advertises its GPUs under (no GFD runs there, so no product label): spelt as GFD
spells models, so the MIG tables and firmware bulletins read it; unknown where the name holds
no single model, two models are offered, or the GPUs are vGPUs (their type names no board)."""

from __future__ import annotations

import pytest

from inventory.mig_profiles import model_key
from inventory.patching.versions import model_matches
from tests.inventory.normalise_helpers import node, only_node

PASSTHROUGH = {"nvidia.com/gpu.workload.config": "vm-passthrough"}


@pytest.mark.parametrize(
    ("capacity", "model", "key"),
    [
        ({"nvidia.com/GH100_H100_SXM5_80GB": 8}, "NVIDIA-H100-SXM5-80GB", "H100-80GB"),
        ({"nvidia.com/GA100_A100_PCIE_40GB": 4}, "NVIDIA-A100-PCIE-40GB", "A100-40GB"),
        ({"nvidia.com/GH100_H100_NVL": 2}, "NVIDIA-H100-NVL", "H100-94GB"),
        ({"nvidia.com/AD102GL_L40S": 4}, "NVIDIA-L40S", None),
        ({"nvidia.com/TU104GL_TESLA_T4": 2}, "NVIDIA-TESLA-T4", None),
    ],
)
def test_a_passthrough_nodes_model_is_its_gpus_pci_name(capacity, model, key):
    found = only_node([node("vm-pt", PASSTHROUGH, capacity=capacity)])
    assert found.gpu_model == model
    assert model_key(found.gpu_model) == key
    # A firmware bulletin for the family concerns the node; one for another family does not.
    family = model.split("-")[-1] if "TESLA" in model else model.split("-")[1]
    assert model_matches(family, found.gpu_model)
    assert not model_matches("V100", found.gpu_model)


@pytest.mark.parametrize(
    "capacity",
    [
        {"nvidia.com/GA107GL_A2___A16": 1},  # pci.ids "GA107GL [A2 / A16]": two models
        {"nvidia.com/GA100_A100_PCIE_40GB": 2, "nvidia.com/TU104GL_TESLA_T4": 2},
        {"nvidia.com/pgpu": 8},  # the Kata sandbox plugin names no model
    ],
)
def test_no_single_model_stays_unknown(capacity):
    assert only_node([node("vm-pt", PASSTHROUGH, capacity=capacity)]).gpu_model is None


def test_a_vgpu_hosts_model_stays_unknown():
    labels = {"nvidia.com/gpu.workload.config": "vm-vgpu"}
    capacity = {"nvidia.com/NVIDIA_A100-3-20C": 2}
    assert only_node([node("vgpu", labels, capacity=capacity)]).gpu_model is None


def test_gfds_product_label_still_wins():
    labels = {**PASSTHROUGH, "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
    capacity = {"nvidia.com/GH100_H100_SXM5_80GB": 8}
    assert only_node([node("vm-pt", labels, capacity=capacity)]).gpu_model == (
        "NVIDIA-H100-80GB-HBM3"
    )
