"""STACK-004 says per node what makes an unknown version known there: a managed node image's
host driver is read by importing nvidia-smi, its toolkit (and Bottlerocket's device plugin) is
the one the image release ships, and only pods are made known by version-tagged images. Built
from real-shaped objects (EKS accelerated AMI, Bottlerocket on Karpenter, AKS), as sync reads
them, with no GPU Operator in the cluster."""

from __future__ import annotations

from typing import Any

from inventory.sources.normalise import normalise
from posture.inputs import PostureInputs
from posture.rules import CHECKS
from tests.inventory.normalise_helpers import ctr, node, pod
from tests.posture.builders import run

BOTTLEROCKET_OS = "Bottlerocket OS 1.26.2 (aws-k8s-1.31-nvidia)"
EKS = {
    "eks.amazonaws.com/nodegroup": "gpu-p4d",
    "eks.amazonaws.com/nodegroup-image": "ami-0a1b2c3d4e5f60718",
    "node.kubernetes.io/instance-type": "p4d.24xlarge",
    "k8s.amazonaws.com/accelerator": "nvidia-tesla-a100",
}
KARPENTER = {
    "karpenter.sh/nodepool": "gpu-bottlerocket",
    "karpenter.k8s.aws/ec2nodeclass": "bottlerocket-gpu",
    "node.kubernetes.io/instance-type": "g6.2xlarge",
}
AKS = {
    "kubernetes.azure.com/agentpool": "gpua100",
    "kubernetes.azure.com/node-image-version": "AKSUbuntu-2204gen2containerd-202411.12.0",
    "node.kubernetes.io/instance-type": "Standard_NC24ads_A100_v4",
}
GPU = {"nvidia.com/gpu": "1"}


def _gpu_node(name: str, labels: dict[str, str], os_image: str) -> dict[str, Any]:
    return node(name, labels, capacity=GPU, allocatable=GPU, nodeInfo={"osImage": os_image})


def _plugin(node_name: str) -> dict[str, Any]:
    """NVIDIA's device plugin by its own Helm release (no GPU Operator), version-tagged."""
    plugin = pod(
        "kube-system",
        f"nvdp-{node_name}",
        ctr("nvidia-device-plugin-ctr", "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"),
        node_name=node_name,
    )
    plugin["metadata"]["ownerReferences"] = [{"kind": "DaemonSet", "name": "nvdp"}]
    return plugin


def _stack004() -> dict[str, Any]:
    objects = [
        _gpu_node("eks-p4d", EKS, "Amazon Linux 2023.6.20241111"),
        _plugin("eks-p4d"),
        _gpu_node("br-l4", KARPENTER, BOTTLEROCKET_OS),
        _gpu_node("aks-a100", AKS, "Ubuntu 22.04.5 LTS"),
        _plugin("aks-a100"),
        pod("team-a", "trainer", ctr("main"), node_name="br-l4"),
    ]
    world = PostureInputs(cluster="test", snapshot=normalise(objects), tenants=())
    return {d.subject_name: d for d in run("STACK-004", world)}


def test_bottlerocket_says_its_release_carries_the_driver_toolkit_and_plugin():
    draft = _stack004()["br-l4"]
    how = draft.evidence["make_known"]
    assert set(how) == {"driver_version", "container_toolkit_version", "device_plugin_version"}
    assert "import_nvidia_smi --cluster test --node br-l4" in how["driver_version"]
    assert how["device_plugin_version"] == (
        "Bottlerocket's device plugin runs on the host: its version follows the Bottlerocket "
        f"release {BOTTLEROCKET_OS}, which states no device-plugin version"
    )
    assert f"from the Bottlerocket release {BOTTLEROCKET_OS}" in how["container_toolkit_version"]
    # Nothing sends a Bottlerocket node to the GPU Operator.
    assert not any("GPU Operator" in text for text in how.values())
    assert draft.title.endswith(f"(from the Bottlerocket release {BOTTLEROCKET_OS})")


def test_eks_and_aks_name_their_node_image_and_leave_the_known_plugin_out():
    drafts = _stack004()
    eks, aks = drafts["eks-p4d"].evidence["make_known"], drafts["aks-a100"].evidence["make_known"]
    assert set(eks) == set(aks) == {"driver_version", "container_toolkit_version"}
    assert (
        "the EKS AMI ami-0a1b2c3d4e5f60718 (Amazon Linux 2023.6.20241111)"
        in (eks["container_toolkit_version"])
    )
    assert "import_nvidia_smi --cluster test --node eks-p4d" in eks["driver_version"]
    assert (
        "AKS node image AKSUbuntu-2204gen2containerd-202411.12.0"
        in (aks["container_toolkit_version"])
    )
    assert "(from the AKS node image AKSUbuntu-2204gen2containerd-202411.12.0)" in (
        drafts["aks-a100"].title
    )


def test_an_operator_pod_is_still_made_known_by_a_version_tagged_image():
    """Off a managed image, a component the GPU Operator deploys keeps the pod instruction."""
    operator = pod(
        "gpu-operator",
        "gpu-operator-1",
        ctr("gpu-operator", "nvcr.io/nvidia/gpu-operator:v25.3.2"),
    )
    toolkit = pod(
        "gpu-operator",
        "nvidia-container-toolkit-daemonset-x",
        ctr(
            "nvidia-container-toolkit-ctr",
            "nvcr.io/nvidia/k8s/container-toolkit@sha256:" + "a" * 64,
        ),
        node_name="metal-1",
    )
    labels = {"nvidia.com/cuda.driver-version.full": "570.172.08"}
    objects = [_gpu_node("metal-1", labels, "Ubuntu 22.04.5 LTS"), operator, toolkit]
    # Bare pods make no namespace the platform's: the deployment names it (only the platform's
    # pods are the node's stack).
    snapshot = normalise(objects, configured_platform=("gpu-operator",))
    world = PostureInputs(cluster="test", snapshot=snapshot, tenants=())
    (draft,) = run("STACK-004", world)
    how = draft.evidence["make_known"]
    assert "the GPU Operator deploys the container toolkit" in how["container_toolkit_version"]
    assert "version-tagged image" in how["container_toolkit_version"]
    assert "(from" not in draft.title


def test_the_static_remediation_is_not_operator_only():
    text = CHECKS["STACK-004"].remediation
    assert "make_known" in text and "node image carries" in text
    assert "as GPU Operator pods" not in text  # it told EKS, AKS, Bottlerocket users to


def test_a_host_of_no_managed_image_is_read_on_its_packages():
    """Bare metal, no GPU Operator: the host's packages carry the toolkit; no image named."""
    objects = [
        _gpu_node("metal-2", {}, "Ubuntu 22.04.5 LTS"),
        _plugin("metal-2"),
        pod("team-a", "trainer", ctr("main"), node_name="metal-2"),
    ]
    world = PostureInputs(cluster="lab", snapshot=normalise(objects), tenants=())
    (draft,) = run("STACK-004", world)
    how = draft.evidence["make_known"]
    assert "installed on the host by its packages" in how["container_toolkit_version"]
    assert "import_nvidia_smi --cluster lab --node metal-2" in how["driver_version"]
    assert "(from" not in draft.title
