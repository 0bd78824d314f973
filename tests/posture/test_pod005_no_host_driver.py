"""POD-005 where the node has no host NVIDIA driver. /dev/nvidia-caps is created by the host
driver; on a GPU Operator vm-passthrough node the GPUs are bound to vfio-pci and the driver
runs in each guest VM, which the inventory records as the node's driver `not_installed`. A
privileged pod mounting / there reaches no /dev/nvidia-caps (rtconfidential k43, k48): no
POD-005, while POD-001 and POD-003 still judge it. Where the driver is installed or unknown,
POD-005 stands (k49). Our own world: a `vault` tenant's debug pod on three kinds of node."""

from __future__ import annotations

from typing import Any

import pytest

from tests.posture.builders import tenant
from tests.posture.gpu_access_world import container, node, pod, run, world

VAULT = tenant("vault")


def _passthrough_node() -> dict[str, Any]:
    labels = {"nvidia.com/gpu.workload.config": "vm-passthrough"}
    found = node("gpu-a", capacity={"nvidia.com/GH100_H100_SXM5_80GB": "8"}, labels=labels)
    found["metadata"]["labels"].pop("nvidia.com/gpu.count")
    return found


def _container_node() -> dict[str, Any]:
    labels = {"nvidia.com/cuda.driver-version.full": "550.144.03"}
    return node("gpu-a", capacity={"nvidia.com/gpu": "8"}, labels=labels)


def _unknown_driver_node() -> dict[str, Any]:
    return node("gpu-a", capacity={"nvidia.com/gpu": "8"})


def _debug_shell(runtime: str | None = "kata-qemu-nvidia-gpu-snp", **env: str) -> dict[str, Any]:
    shell = container(
        "shell",
        "busybox:1.36",
        securityContext={"privileged": True},
        volumeMounts=[{"name": "host", "mountPath": "/host"}],
        env=[{"name": k, "value": v} for k, v in env.items()],
    )
    spec: dict[str, Any] = {"volumes": [{"name": "host", "hostPath": {"path": "/"}}]}
    if runtime:
        spec["runtimeClassName"] = runtime
    return pod("vault", "debug-shell", shell, **spec)


def _fired(node_object: dict[str, Any], debug: dict[str, Any]) -> set[str]:
    inputs = world([node_object, debug], (VAULT,))
    return {check for check in ("POD-001", "POD-003", "POD-005") if run(check, inputs)}


@pytest.mark.parametrize("runtime", ["kata-qemu-nvidia-gpu-snp", None])
def test_no_caps_to_reach_where_the_node_runs_no_host_driver(runtime):
    inputs = world([_passthrough_node(), _debug_shell(runtime)], (VAULT,))
    (read,) = inputs.snapshot.nodes
    assert "driver" in read.not_installed  # what the node's components say
    assert _fired(_passthrough_node(), _debug_shell(runtime)) == {"POD-001", "POD-003"}


def test_the_mig_capability_variables_reach_nothing_there_either():
    debug = _debug_shell(NVIDIA_MIG_CONFIG_DEVICES="all")
    assert "POD-005" not in _fired(_passthrough_node(), debug)


@pytest.mark.parametrize("node_object", [_container_node(), _unknown_driver_node()])
def test_a_node_whose_driver_is_installed_or_unknown_keeps_pod005(node_object):
    assert _fired(node_object, _debug_shell(None)) == {"POD-001", "POD-003", "POD-005"}
