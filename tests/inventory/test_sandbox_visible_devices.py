"""NVIDIA_VISIBLE_DEVICES on a node that hands its GPUs to VMs (the GPU Operator's
`nvidia.com/gpu.workload.config` vm-passthrough / vm-vgpu, or the ClusterPolicy's sandbox
default): no container toolkit runs there, so the variable reaches no GPU (DESIGN §2), whatever
a ClusterPolicy's toolkit settings say: no POD-011, not even a latent one, and no GPU holding,
privileged or not (a privileged container's /dev is POD-001's). A container workload node is
read as before."""

from __future__ import annotations

from typing import Any

import pytest

from posture.rules.common import gpu_holdings
from posture.rules.stack.visible_devices import node_envvar_access
from tests.posture.builders import tenant
from tests.posture.gpu_access_world import cluster_policy, container, node, pod, run, world

ALPHA = tenant("alpha")
BETA = tenant("beta")
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
    # The node's stack says "no", as the inventory reads it ...
    (node,) = inputs.snapshot.nodes
    assert node_envvar_access(inputs, node).verdict == "no"
    # ... and there is no toolkit to ignore the variable: nothing to report, not even latent.
    assert run("POD-011", inputs) == []
    assert run("STACK-008", inputs) == []


def _virt_launcher(ns: str, name: str) -> dict[str, Any]:
    return pod(ns, name, container("compute", gpu={"nvidia.com/AD102GL_L40S": "1"}))


@pytest.mark.parametrize("workload", ["vm-passthrough", "vm-vgpu"])
def test_a_privileged_container_there_is_pod001s_not_a_gpu_holding(workload):
    """A privileged container sees the node's /dev whatever it sets (VFIO groups on a
    passthrough node): POD-001 judges that. The variable itself is read by no toolkit there,
    so it makes no POD-011 and no time-slicing holding beside the VMs."""
    privileged = container(
        "probe",
        env=[{"name": NVD, "value": "all"}],
        securityContext={"privileged": True},
    )
    objects = [
        _vm_node({"nvidia.com/gpu.workload.config": workload}),
        pod("alpha", "probe", privileged),
        _virt_launcher("beta", "virt-launcher-b"),
        cluster_policy(**ACCEPTING),
    ]
    inputs = world(objects, (ALPHA, BETA))
    assert run("POD-011", inputs) == []
    assert not any(h.through_env for h in gpu_holdings(inputs, inputs.snapshot.nodes[0]))
    assert run("SHARE-001", inputs) == []
    # alpha's, and beta's too: its VM's VFIO groups are under the /dev alpha's container sees.
    assert [d.tenants for d in run("POD-001", inputs)] == [("alpha", "beta")]


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


def test_a_node_labelled_for_vms_that_still_serves_containers_is_judged_as_one():
    """The label flipped to vm-passthrough, but the Operator has not moved the node yet: its
    container device plugin still advertises nvidia.com/gpu and its toolkit still runs, so the
    variable still reaches GPUs (rtself k15): POD-011 as on any container node."""
    labels = {
        "nvidia.com/gpu.workload.config": "vm-passthrough",
        "nvidia.com/gpu.deploy.container-toolkit": "true",
    }
    objects = [node("gpu-a", capacity={"nvidia.com/gpu": "8"}, labels=labels), _probe()]
    inputs = world([*objects, cluster_policy(**ACCEPTING)], (ALPHA,))
    (node_read,) = inputs.snapshot.nodes
    assert node_read.sharing_strategy != "vm-passthrough"
    (draft,) = run("POD-011", inputs)
    assert draft.severity == "high"
