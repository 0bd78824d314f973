"""POD-005 on a node whose accelerators are all another vendor's. /dev/nvidia-caps exists only
where NVIDIA's driver is loaded: a privileged pod mounting / on a node holding only AMD's
MI300X GPUs (its capacity, or AMD's DRA driver's slices) or Intel's cards reaches none, so no
POD-005 (rtamd k46), while POD-001 and POD-003 still judge it. A node with NVIDIA GPUs beside
them, or one whose accelerators nothing says (GPU labels, no capacity read), keeps POD-005.
Our own world: a `vault` tenant's debug pod on each kind of node."""

from __future__ import annotations

from typing import Any

import pytest

from tests.posture.builders import tenant
from tests.posture.gpu_access_world import container, pod, run, world
from tests.posture.test_dra_amd import amd_class, amd_device, amd_slice

VAULT = tenant("vault")
NODE = "mi300-a"  # test_dra_amd's slices name it


def _node(capacity: dict[str, str], labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": NODE, "labels": {"kubernetes.io/hostname": NODE, **(labels or {})}},
        "spec": {},
        "status": {
            "capacity": {"cpu": "96", **capacity},
            "allocatable": {"cpu": "95", **capacity},
        },
    }


def _debug_shell() -> dict[str, Any]:
    shell = container(
        "shell",
        "busybox:1.36",
        securityContext={"privileged": True},
        volumeMounts=[{"name": "host", "mountPath": "/host"}],
    )
    volumes = [{"name": "host", "hostPath": {"path": "/"}}]
    return pod("vault", "debug-shell", shell, node_name=NODE, volumes=volumes)


def _fired(*objects: dict[str, Any]) -> set[str]:
    inputs = world([*objects, _debug_shell()], (VAULT,))
    return {check for check in ("POD-001", "POD-003", "POD-005") if run(check, inputs)}


@pytest.mark.parametrize(
    "capacity",
    [
        {"amd.com/gpu": "8"},
        {"amd.com/cpx_nps4": "64"},
        {"gpu.intel.com/i915": "2"},
        {"habana.ai/gaudi": "8"},
    ],
)
def test_no_caps_to_reach_on_a_node_of_another_vendors_accelerators(capacity):
    assert _fired(_node(capacity)) == {"POD-001", "POD-003"}


def test_nor_on_a_node_whose_gpus_only_amds_dra_driver_publishes():
    slices = [amd_class(), amd_slice([amd_device("gpu-0-128")])]
    assert _fired(_node({}), *slices) == {"POD-001", "POD-003"}


@pytest.mark.parametrize(
    ("capacity", "labels"),
    [
        ({"amd.com/gpu": "8", "nvidia.com/gpu": "8"}, {}),  # NVIDIA's beside AMD's
        ({"amd.com/gpu": "8", "nvidia.com/gpu": "0"}, {}),  # a plugin that lost its GPUs
        ({"amd.com/gpu": "8"}, {"nvidia.com/gpu.present": "true"}),  # GFD says NVIDIA's
        ({}, {"feature.node.kubernetes.io/pci-10de.present": "true"}),  # NFD: NVIDIA, no plugin
        ({}, {}),  # no accelerator known at all
    ],
)
def test_a_node_that_may_hold_nvidia_gpus_keeps_pod005(capacity, labels):
    assert _fired(_node(capacity, labels)) == {"POD-001", "POD-003", "POD-005"}
