"""An NVIDIA component is NVIDIA's image: AMD's GPU Operator (`rocm/gpu-operator`) and device
plugin (`rocm/k8s-device-plugin`) carry NVIDIA's names, and are never read as NVIDIA's (their
versions judged by NVIDIA's bulletins, the lowest of two operator versions taken). Mirrors of
NVIDIA's images keep NVIDIA's names and are NVIDIA's. Our own small mixed world (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from inventory.snapshot import Workload
from inventory.sources.gpu_config import operator_namespaces
from inventory.sources.images import component_of, namesake, other_vendor
from inventory.sources.node_versions import operator_version
from inventory.sources.normalise import normalise
from tests.inventory.normalise_helpers import controller, ctr, node, pod


@pytest.mark.parametrize(
    ("image", "component"),
    [
        # NVIDIA's registries and mirrors of them.
        ("nvcr.io/nvidia/gpu-operator:v24.9.1", "gpu_operator"),
        ("registry.example.com/nvidia/gpu-operator:v24.9.1", "gpu_operator"),
        ("registry.example.com/nvidia/cloud-native/k8s-dra-driver:v0.1.0", "dra_driver"),
        ("harbor.corp:5000/mirror/k8s-device-plugin:v0.17.0", "device_plugin"),
        # A mirror naming no vendor at all: NVIDIA's names, so NVIDIA's (as mirrors are laid out).
        ("registry.local/gpu-operator:v24.9.1", "gpu_operator"),
        # A word, not a substring: amd64 is an architecture, not AMD.
        ("registry.example.com/amd64/k8s-device-plugin:v0.17.0", "device_plugin"),
        ("gke.gcr.io/nvidia-gpu-device-plugin:v0.0.35-gke.1", "device_plugin"),
        # Other vendors' images under NVIDIA's names.
        ("rocm/gpu-operator:v1.2.0", None),
        ("docker.io/rocm/k8s-device-plugin:1.31.0.6", None),
        ("registry.example.com/mirror/rocm/k8s-device-plugin:1.31.0.6", None),
        ("registry.example.com/amd-gpu/gpu-operator:v1.2.0", None),
        ("vault.habana.ai/gaudi/k8s-device-plugin:1.18.2", None),
        ("intel/k8s-device-plugin:0.30.0", None),
    ],
)
def test_a_component_is_nvidias_only_where_its_image_is(image, component):
    assert component_of(image) == component


def test_another_vendors_image_names_its_vendor_and_the_component_it_mimics():
    assert other_vendor("rocm/gpu-operator:v1.2.0") == "AMD"
    assert namesake("rocm/gpu-operator:v1.2.0") == "gpu_operator"
    assert other_vendor("vault.habana.ai/docker-k8s-device-plugin/x:1.18.2") == "Intel"
    assert other_vendor("nvcr.io/nvidia/gpu-operator:v24.9.1") is None
    assert namesake("nvcr.io/nvidia/gpu-operator:v24.9.1") is None


NVIDIA_OPERATOR = "nvcr.io/nvidia/gpu-operator:v24.9.1"
AMD_OPERATOR = "rocm/gpu-operator:v1.2.0"
AMD_PLUGIN = "rocm/k8s-device-plugin:1.31.0.6"


def _deployment(namespace: str, name: str, image: str, **labels: str) -> Workload:
    return Workload(
        kind="Deployment", namespace=namespace, name=name, images={name: image}, labels=labels
    )


def test_amds_operator_beside_nvidias_never_lowers_nvidias_version():
    workloads = [
        _deployment("gpu-operator", "gpu-operator", NVIDIA_OPERATOR),
        _deployment("kube-amd-gpu", "amd-gpu-operator-controller-manager", AMD_OPERATOR),
    ]
    assert operator_version(workloads) == "24.9.1"
    assert operator_version(workloads[1:]) is None


def test_amds_operator_named_gpu_operator_gives_no_version_by_its_label():
    amd = _deployment(
        "kube-amd-gpu", "gpu-operator", AMD_OPERATOR, **{"app.kubernetes.io/version": "v1.2.0"}
    )
    assert operator_version([amd]) is None


def _amd_daemonset(name: str, image: str) -> dict[str, Any]:
    return controller("DaemonSet", "kube-amd-gpu", name, image)


def _cluster_role_binding(namespace: str, account: str) -> dict[str, Any]:
    return {
        "kind": "ClusterRoleBinding",
        "metadata": {"name": f"{namespace}-{account}"},
        "roleRef": {"kind": "ClusterRole", "name": account},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
    }


def mixed_world() -> list[dict[str, Any]]:
    """An H100 node managed by NVIDIA's GPU Operator v24.9.1 and an MI300X node running AMD's
    GPU Operator v1.2.0 and its device plugin, each operator with its RBAC."""
    h100 = node(
        "h100-1",
        {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.count": "8"},
        capacity={"nvidia.com/gpu": "8"},
    )
    mi300x = node("mi300x-1", {}, capacity={"amd.com/gpu": "8"})
    amd_plugin_pod = pod(
        "kube-amd-gpu",
        "amd-device-plugin-x1",
        ctr("device-plugin", AMD_PLUGIN),
        node_name="mi300x-1",
    )
    amd_plugin_pod["metadata"]["ownerReferences"] = [
        {"kind": "DaemonSet", "name": "amd-device-plugin", "controller": True}
    ]
    return [
        h100,
        mi300x,
        controller("Deployment", "gpu-operator", "gpu-operator", NVIDIA_OPERATOR),
        controller(
            "Deployment", "kube-amd-gpu", "amd-gpu-operator-controller-manager", AMD_OPERATOR
        ),
        _amd_daemonset("amd-device-plugin", AMD_PLUGIN),
        amd_plugin_pod,
        _cluster_role_binding("gpu-operator", "gpu-operator"),
        _cluster_role_binding("kube-amd-gpu", "amd-gpu-operator-controller-manager"),
    ]


def test_the_nvidia_node_reports_nvidias_operator_and_the_amd_node_no_nvidia_plugin():
    snapshot = normalise(mixed_world())
    nodes = {n.name: n for n in snapshot.nodes}
    assert nodes["h100-1"].gpu_operator_version == "24.9.1"
    assert nodes["mi300x-1"].device_plugin_version is None
    assert nodes["mi300x-1"].gpu_operator_version is None
    # No sync warning takes AMD's operator for the GPU Operator (missing its ClusterPolicy).
    assert not any("kube-amd-gpu" in w for w in snapshot.warnings)


def test_amds_operator_namespace_is_the_platforms_but_not_the_gpu_operators():
    snapshot = normalise(mixed_world())
    assert operator_namespaces(snapshot.workloads, snapshot.bindings) == {"gpu-operator"}
    # AMD's stack is privileged by design, placed by its RBAC as NVIDIA's is: never a tenant's.
    assert {"gpu-operator", "kube-amd-gpu"} <= set(snapshot.platform_namespaces)


INTEL_OPERATOR = "intel/intel-deviceplugin-operator:0.31.1"
INTEL_GPU_PLUGIN = "intel/intel-gpu-plugin:0.31.1"


def test_intels_device_plugins_operator_namespace_is_the_platforms():
    """Intel's operator and GPU plugin carry names of their own (no NVIDIA namesake): placed by
    the same evidence as AMD's (the operator's image and a ClusterRoleBinding naming its
    namespace), their namespace is the platform's, not a tenant's nobody owns."""
    ns = "inteldeviceplugins-system"
    world = [
        node("flex-1", {}, capacity={"gpu.intel.com/i915": "4"}),
        controller("Deployment", ns, "inteldeviceplugins-controller-manager", INTEL_OPERATOR),
        controller("DaemonSet", ns, "intel-gpu-plugin-gpudeviceplugin", INTEL_GPU_PLUGIN),
        _cluster_role_binding(ns, "inteldeviceplugins-controller-manager"),
    ]
    snapshot = normalise(world)
    assert ns in snapshot.platform_namespaces
    # No ClusterRoleBinding names it: the image alone does not place a namespace.
    alone = normalise([world[0], world[1], _cluster_role_binding("other", "x")])
    assert ns not in alone.platform_namespaces


HABANA_PLUGIN = "vault.habana.ai/docker-k8s-device-plugin/docker-k8s-device-plugin:1.19.1"


def _gaudi_world(*more: dict[str, Any]) -> list[dict[str, Any]]:
    """Habana's Gaudi plugin as its manifest runs it: a DaemonSet in habana-system, no RBAC."""
    return [
        node("gaudi-1", {}, capacity={"habana.ai/gaudi": "8"}),
        controller("DaemonSet", "habana-system", "habanalabs-device-plugin", HABANA_PLUGIN),
        *more,
    ]


def test_a_vendor_plugin_alone_where_no_rbac_was_read_is_the_platforms():
    """As NVIDIA's plugin DaemonSet: with no ClusterRoleBinding read its image places a
    namespace that holds nothing else."""
    assert "habana-system" in normalise(_gaudi_world()).platform_namespaces
    crowded = _gaudi_world(controller("Deployment", "habana-system", "notebook", "jupyter:4"))
    assert "habana-system" not in normalise(crowded).platform_namespaces


def test_a_vendor_plugin_nothing_vouches_for_is_unclassified_and_the_sync_says_how_to_fix():
    snapshot = normalise(_gaudi_world(_cluster_role_binding("other", "x")))
    assert "habana-system" not in snapshot.platform_namespaces
    (said,) = [w for w in snapshot.warnings if "habana-system/habanalabs-device-plugin" in w]
    assert "Intel's device plugin" in said and "gpuposture.io/platform=true" in said
    vouched = _gaudi_world(_cluster_role_binding("habana-system", "default"))
    snapshot = normalise(vouched)
    assert "habana-system" in snapshot.platform_namespaces
    assert not any("habanalabs-device-plugin" in w for w in snapshot.warnings)


def test_a_look_alike_plugin_image_places_no_namespace():
    """Only the vendor's own repository places a namespace where no RBAC was read: a vendor's
    word in another path (rtself4 k38) is anyone's to write."""
    fake = "docker.io/intel-fan/docker-k8s-device-plugin:1.0"
    world = [
        node("gaudi-1", {}, capacity={"habana.ai/gaudi": "8"}),
        controller("DaemonSet", "intel-fan", "habanalabs-device-plugin", fake),
    ]
    assert "intel-fan" not in normalise(world).platform_namespaces


@pytest.mark.parametrize(
    ("image", "placed"),
    [
        ("index.docker.io/rocm/k8s-device-plugin:1.31.0", True),  # Docker Hub by another name
        ("docker.io/intel/intel-gpu-plugin:0.31.1", True),
        ("docker.io/intel/../evil/intel-gpu-plugin:0.30.0", False),  # no such path component
        ("rocm.evil.io/rocm/k8s-device-plugin:1.31.0", False),
        ("docker.io/ROCm/k8s-device-plugin:1.31.0", False),  # not a valid repository
    ],
)
def test_only_the_vendors_own_repository_places_a_namespace(image, placed):
    world = [
        node("mi300x-1", {}, capacity={"amd.com/gpu": "8"}),
        controller("DaemonSet", "amd-plugin", "amd-device-plugin", image),
    ]
    assert ("amd-plugin" in normalise(world).platform_namespaces) is placed
