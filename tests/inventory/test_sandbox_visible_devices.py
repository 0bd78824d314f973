"""NVIDIA_VISIBLE_DEVICES on a node that hands its GPUs to VMs (the GPU Operator's
`nvidia.com/gpu.workload.config` vm-passthrough / vm-vgpu, or the ClusterPolicy's sandbox
default): no container toolkit runs there, so the variable reaches no GPU (DESIGN §2), whatever
a ClusterPolicy's toolkit settings say. A container workload node is read as before."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.posture.builders import tenant
from tests.posture.gpu_access_world import cluster_policy, container, node, pod, run, world

ALPHA = tenant("alpha")
NVD = "NVIDIA_VISIBLE_DEVICES"
ACCEPT = "ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED"
# The ClusterPolicy's toolkit would accept the variable, were its toolkit on the node.
ACCEPTING = {"toolkit": {"env": [{"name": ACCEPT, "value": "true"}]}}


def _probe() -> dict[str, Any]:
    image = "nvidia/cuda:12.4.1-base-ubuntu22.04"
    return pod("alpha", "probe", container("probe", image, env=[{"name": NVD, "value": "all"}]))


def _vm_node(labels: dict[str, str] | None) -> dict[str, Any]:
    # The sandbox device plugin's passthrough resource; no GFD count on such a node.
    found = node("gpu-a", capacity={"nvidia.com/AD102GL_L40S": "4"}, labels=labels)
    found["metadata"]["labels"].pop("nvidia.com/gpu.count")
    return found


@pytest.mark.parametrize(
    ("labels", "policy"),
    [
        ({"nvidia.com/gpu.workload.config": "vm-passthrough"}, cluster_policy(**ACCEPTING)),
        ({"nvidia.com/gpu.workload.config": "vm-vgpu"}, cluster_policy(**ACCEPTING)),
        ({"nvidia.com/gpu.workload.config": "vm-passthrough"}, None),
        # Unlabelled: the ClusterPolicy's sandboxWorkloads.defaultWorkload decides.
        (
            None,
            cluster_policy(
                sandboxWorkloads={"enabled": True, "defaultWorkload": "vm-passthrough"},
                **ACCEPTING,
            ),
        ),
    ],
)
def test_the_variable_reaches_no_gpu_where_the_gpus_go_to_vms(labels, policy):
    objects = [_vm_node(labels), _probe(), *([policy] if policy else [])]
    inputs = world(objects, (ALPHA,))
    (draft,) = run("POD-011", inputs)
    (entry,) = draft.evidence["pods"]
    assert entry["node_honours_visible_devices"] == "no"
    assert draft.severity == "low" and "latent" in draft.title
    assert "honoured_here" not in json.dumps(draft.evidence)
    assert run("STACK-008", inputs) == []


def test_a_container_node_still_honours_the_clusterpolicys_toolkit_setting():
    labels = {
        "nvidia.com/gpu.workload.config": "container",
        "nvidia.com/gpu.deploy.container-toolkit": "true",
    }
    objects = [node("gpu-a", capacity={"nvidia.com/gpu": "8"}, labels=labels), _probe()]
    (draft,) = run("POD-011", world([*objects, cluster_policy(**ACCEPTING)], (ALPHA,)))
    (entry,) = draft.evidence["pods"]
    assert entry["node_honours_visible_devices"] == "yes"
    assert draft.severity == "high"
