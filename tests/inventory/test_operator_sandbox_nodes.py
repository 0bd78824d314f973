"""The GPU Operator manages the nodes whose GPUs it hands to VMs through its sandbox operands
(the sandbox device plugin, the VFIO, vGPU, Kata and CC managers, the sandbox validator): on a
vm-passthrough or Kata node none of its container operands runs, and its version is still the
node's (its bulletins, STACK-003, apply there). DaemonSet names of GPU Operator 24.x/25.x."""

from __future__ import annotations

from typing import Any

import pytest

from inventory.node_components import node_components
from inventory.sources.normalise import normalise
from tests.inventory.normalise_helpers import controller, ctr, node, pod

NS = "gpu-operator"
NVCR = "nvcr.io/nvidia"
CONTAINER_OPERANDS = {
    "nvidia-driver-daemonset": (f"{NVCR}/driver:570.133.20-ubuntu24.04", "driver"),
    "nvidia-container-toolkit-daemonset": (
        f"{NVCR}/k8s/container-toolkit:v1.17.5-ubuntu20.04",
        "container-toolkit",
    ),
    "nvidia-device-plugin-daemonset": (f"{NVCR}/k8s-device-plugin:v0.17.1", "device-plugin"),
}
SANDBOX_OPERANDS = {
    "nvidia-sandbox-device-plugin-daemonset": (
        f"{NVCR}/kubevirt-gpu-device-plugin:v1.3.1",
        "sandbox-device-plugin",
    ),
    "nvidia-sandbox-validator": (
        f"{NVCR}/cloud-native/gpu-operator-validator:v25.3.0",
        "sandbox-validator",
    ),
    "nvidia-vfio-manager": (f"{NVCR}/cuda:12.8.1-base-ubi9", "vfio-manager"),
    "nvidia-kata-manager": (f"{NVCR}/cloud-native/k8s-kata-manager:v0.2.3", "kata-manager"),
    "nvidia-cc-manager": (f"{NVCR}/cloud-native/k8s-cc-manager:v0.1.1", "cc-manager"),
}
OFF = {
    f"nvidia.com/gpu.deploy.{c}": "false" for c in ("driver", "container-toolkit", "device-plugin")
}
PASSTHROUGH = {
    "nvidia.com/gpu.workload.config": "vm-passthrough",
    "nvidia.com/gpu.deploy.sandbox-device-plugin": "true",
    "nvidia.com/gpu.deploy.sandbox-validator": "true",
    "nvidia.com/gpu.deploy.vfio-manager": "true",
    **OFF,
}
KATA = {
    "nvidia.com/gpu.workload.config": "vm-passthrough",
    "nvidia.com/gpu.deploy.sandbox-device-plugin": "true",
    "nvidia.com/gpu.deploy.kata-manager": "true",
    "nvidia.com/gpu.deploy.cc-manager": "true",
    **OFF,
}


def daemonset(name: str, image: str, operand: str) -> dict[str, Any]:
    ds = controller("DaemonSet", NS, name, image)
    ds["spec"]["template"]["spec"]["nodeSelector"] = {f"nvidia.com/gpu.deploy.{operand}": "true"}
    return ds


def ds_pod(ds: str, image: str, node_name: str) -> dict[str, Any]:
    found = pod(NS, f"{ds}-x1", ctr(ds, image), node_name=node_name)
    found["metadata"]["ownerReferences"] = [{"kind": "DaemonSet", "name": ds, "controller": True}]
    return found


def world(*extra: dict[str, Any], sandbox_specs: bool = True) -> list[dict[str, Any]]:
    operands = {**CONTAINER_OPERANDS, **(SANDBOX_OPERANDS if sandbox_specs else {})}
    return [
        node("vmpt-l40s-01", PASSTHROUGH, capacity={"nvidia.com/AD102GL_L40S": "4"}),
        node("kata-h100-01", KATA, capacity={"nvidia.com/pgpu": "8"}),
        controller("Deployment", NS, "gpu-operator", f"{NVCR}/gpu-operator:v25.3.0"),
        *(daemonset(name, image, operand) for name, (image, operand) in operands.items()),
        # Pods were read (a snapshot without them says nothing is absent).
        pod("team-a", "vm-launcher", ctr("main"), node_name="vmpt-l40s-01"),
        *extra,
    ]


def nodes_of(objects: list[dict[str, Any]]):
    return {n.name: n for n in normalise(objects).nodes}


@pytest.mark.parametrize("name", ["vmpt-l40s-01", "kata-h100-01"])
def test_the_operator_manages_a_node_through_its_sandbox_operands(name):
    found = nodes_of(world())[name]
    assert found.gpu_operator_version == "25.3.0"
    assert node_components(found)["gpu_operator"]["state"] == "installed"
    assert "gpu_operator" not in found.not_installed


def test_a_sandbox_operand_pod_shows_it_manages_the_node_without_its_daemonset_spec():
    """Only the container operands' specs are read (none selects the node); the VFIO manager's
    pod (NVIDIA's CUDA base image: its image names no operand) runs on it."""
    image = SANDBOX_OPERANDS["nvidia-vfio-manager"][0]
    objects = world(ds_pod("nvidia-vfio-manager", image, "vmpt-l40s-01"), sandbox_specs=False)
    assert nodes_of(objects)["vmpt-l40s-01"].gpu_operator_version == "25.3.0"


def test_a_node_none_of_its_operands_selects_is_still_not_managed():
    # Neither a container nor a sandbox operand selects this node: as before.
    bare = node("other-gpu", OFF, capacity={"nvidia.com/gpu": "8"})
    found = nodes_of(world(bare))["other-gpu"]
    assert found.gpu_operator_version is None
    assert "does not manage this node" in found.not_installed["gpu_operator"]
