"""AMD's DRA driver (`rocm/k8s-gpu-dra-driver`: its kubelet plugin DaemonSet is privileged and its
chart binds a ClusterRole to its service account) is AMD's GPU stack, placed as AMD's device
plugin is: with a ClusterRoleBinding naming its namespace, or by its published image where no
RBAC was read. Where nothing vouches for it, the sync names the DaemonSet, as it does for a
device plugin, NVIDIA's DRA driver and plugin included. Our own small worlds (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from inventory.sources.normalise import normalise
from tests.inventory.normalise_helpers import controller, node

AMD_DRA = "docker.io/rocm/k8s-gpu-dra-driver:v0.1.0"
NVIDIA_DRA = "nvcr.io/nvidia/k8s-dra-driver-gpu:v25.3.0"
NS = "amd-dra"
PLUGIN = "amd-gpu-dra-driver-kubeletplugin"


def _binding(namespace: str, account: str) -> dict[str, Any]:
    return {
        "kind": "ClusterRoleBinding",
        "metadata": {"name": f"{namespace}-{account}"},
        "roleRef": {"kind": "ClusterRole", "name": account},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
    }


def _world(image: str, *more: dict[str, Any]) -> list[dict[str, Any]]:
    return [node("dra-1", {}), controller("DaemonSet", NS, PLUGIN, image), *more]


def test_amds_dra_driver_with_its_binding_is_the_platforms():
    snapshot = normalise(_world(AMD_DRA, _binding(NS, "default")))
    assert NS in snapshot.platform_namespaces
    assert not any(PLUGIN in w for w in snapshot.warnings)


def test_amds_dra_driver_nothing_vouches_for_is_unclassified_and_the_sync_names_it():
    snapshot = normalise(_world(AMD_DRA, _binding("other", "x")))
    assert NS not in snapshot.platform_namespaces
    (said,) = [w for w in snapshot.warnings if f"{NS}/{PLUGIN}" in w]
    assert "AMD's DRA driver" in said and "gpuposture.io/platform=true" in said


@pytest.mark.parametrize(
    ("image", "placed"),
    [
        (AMD_DRA, True),  # AMD's own repository, no RBAC read
        ("docker.io/rocm-fan/k8s-gpu-dra-driver:v0.1.0", False),  # a look-alike path
    ],
)
def test_amds_dra_driver_image_alone_places_only_from_amds_repository(image, placed):
    assert (NS in normalise(_world(image)).platform_namespaces) is placed


def test_nvidias_dra_driver_is_placed_by_its_binding_and_named_where_not():
    assert NS in normalise(_world(NVIDIA_DRA, _binding(NS, "default"))).platform_namespaces
    snapshot = normalise(_world(NVIDIA_DRA, _binding("other", "x")))
    assert NS not in snapshot.platform_namespaces
    (said,) = [w for w in snapshot.warnings if f"{NS}/{PLUGIN}" in w]
    assert "NVIDIA DRA driver" in said and "GPUPOSTURE_PLATFORM_NAMESPACES" in said
