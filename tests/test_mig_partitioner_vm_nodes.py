"""The MIG partitioner and nodes whose GPUs go to VMs (the GPU Operator's
`nvidia.com/gpu.workload.config` vm-passthrough / vm-vgpu, or its ClusterPolicy's sandbox default):
the Operator runs no MIG Manager there, so `nvidia.com/mig.config` does nothing. Such a node is
not offered in the node list, and loading it says why it cannot be partitioned."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from tests.conftest import api_client

pytestmark = pytest.mark.django_db

WORKLOAD = "nvidia.com/gpu.workload.config"


def _node(cluster, name: str, labels: dict[str, str], config: str = "all-3g.40gb"):
    from inventory.models import Node

    return Node.objects.create(
        cluster=cluster,
        name=name,
        is_gpu_node=True,
        gpu_model="NVIDIA-H100-SXM5-80GB",  # a passthrough node's model, read from its PCI name
        gpu_count=8,
        mig_config=config,
        labels=labels,
        changed_at=timezone.now(),
    )


def _policy(cluster, sandbox: str | None):
    from inventory.models import ClusterObject

    spec: dict[str, Any] = {"mig_manager_config_name": "default-mig-parted-config"}
    if sandbox is not None:
        spec |= {"sandbox_workloads_enabled": True, "sandbox_workloads_default": sandbox}
    ClusterObject.objects.create(
        cluster=cluster, kind="gpu_operator_policy", name="cluster-policy", data={"spec": spec}
    )


@pytest.fixture
def vm_lab(small_world):
    """Cluster vm-lab: a container node, a vm-passthrough node, a vm-vgpu node (labelled in
    upper case, as sandbox_workload reads it too), a node labelled `container`; cluster
    vm-default: a ClusterPolicy whose sandbox default is vm-passthrough, an unlabelled node and
    one labelled `container`."""
    from inventory.models import Cluster

    lab = Cluster.objects.create(name="vm-lab")
    _policy(lab, None)
    _node(lab, "ctr-1", {})
    _node(lab, "ctr-2", {WORKLOAD: "container"})
    _node(lab, "vmpt-1", {WORKLOAD: "vm-passthrough"}, config="")
    _node(lab, "vgpu-1", {WORKLOAD: " VM-vGPU"})
    default = Cluster.objects.create(name="vm-default")
    _policy(default, "vm-passthrough")
    _node(default, "plain-1", {})
    _node(default, "ctr-3", {WORKLOAD: "container"})


def _listed(user) -> str:
    client = Client()
    client.force_login(user)
    return client.get("/mig/").content.decode()


def test_nodes_whose_gpus_go_to_vms_are_not_offered(vm_lab, personas):
    body = _listed(personas["security_lead"])
    for offered in ("vm-lab/ctr-1", "vm-lab/ctr-2", "vm-default/ctr-3"):
        assert f'value="{offered}"' in body, offered
    for left_out in ("vm-lab/vmpt-1", "vm-lab/vgpu-1", "vm-default/plain-1"):
        assert f'value="{left_out}"' not in body, left_out


@pytest.mark.parametrize(
    ("cluster", "node", "workload"),
    [
        ("vm-lab", "vgpu-1", "vm-vgpu"),
        ("vm-lab", "vmpt-1", "vm-passthrough"),
        ("vm-default", "plain-1", "vm-passthrough"),  # by the ClusterPolicy's default
    ],
)
def test_loading_a_vm_node_says_it_cannot_be_partitioned(vm_lab, personas, cluster, node, workload):
    lead = personas["security_lead"]
    answer = api_client(lead).get("/api/v1/mig/node-layout/", {"cluster": cluster, "node": node})
    assert answer.status_code == 200
    data = answer.json()
    assert data["valid"] is False
    (error,) = data["errors"]
    assert f"gives its GPUs to VMs (nvidia.com/gpu.workload.config={workload})" in error
    assert "no MIG Manager" in error
    client = Client()
    client.force_login(lead)
    page = client.get("/mig/", {"cluster": cluster, "node": node}).content.decode()
    assert "gives its GPUs to VMs" in page
