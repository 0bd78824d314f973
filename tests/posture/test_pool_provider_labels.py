"""Node pools named by more providers' node labels, and the pool-scoped approvals that follow
them (SHARE-004 reads the node's pool through inventory.pools)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from inventory.pools import node_pool
from posture.inputs import SharingRequestInfo
from tests.posture.builders import inputs, pod, run, sliced_node, tenant

# Each label as the provider writes it on a Node, with a pool name of ours.
PROVIDER_LABELS = [
    ("doks.digitalocean.com/node-pool", "gpu-h100"),
    ("ibm-cloud.kubernetes.io/worker-pool-name", "gpu-l40s"),
    ("karpenter.sh/provisioner-name", "gpu-spot"),
    ("compute.coreweave.com/node-pool", "h100-train"),
    ("oke.oraclecloud.com/pool.name", "oke-gpu"),
    ("alibabacloud.com/nodepool-id", "np4f1c2d9e0a7b4c"),
]


def world_in_pool(labels: dict[str, str], approved_pool: str):
    world = inputs(
        nodes=(sliced_node(labels=labels),),
        pods=(pod("tr1", "train", gpu={"nvidia.com/gpu": 1}),),
        tenants=(tenant("tr1", "internal_trusted"),),
    )
    approval = SharingRequestInfo(
        id=1, tenant="tr1", mode="time_slicing", node_pool=approved_pool, state="active"
    )
    return replace(world, sharing_requests=(approval,))


@pytest.mark.parametrize(("label", "pool"), PROVIDER_LABELS)
def test_the_provider_label_names_the_pool(label, pool):
    assert node_pool({label: pool, "kubernetes.io/hostname": "n1"}) == pool


@pytest.mark.parametrize(("label", "pool"), PROVIDER_LABELS)
def test_an_approval_scoped_to_the_providers_pool_covers_its_nodes(label, pool):
    assert run("SHARE-004", world_in_pool({label: pool}, pool)) == []
    [finding] = run("SHARE-004", world_in_pool({label: pool}, "another-pool"))
    assert finding.evidence["node_pool"] == pool
    assert finding.tenants == ("tr1",)


@pytest.mark.parametrize(
    "label",
    [
        # On Cluster API / Rancher / OpenShift Machines, never copied to the Node: a label by
        # these names on a Node was written by someone else and names no provider pool.
        "cluster.x-k8s.io/deployment-name",
        "rke.cattle.io/rke-machine-pool-name",
        "machine.openshift.io/cluster-api-machineset",
    ],
)
def test_machine_labels_that_never_reach_the_node_name_no_pool(label):
    assert node_pool({label: "md-0"}) == ""


def test_our_own_pool_label_comes_before_the_providers():
    labels = {"doks.digitalocean.com/node-pool": "pool-abc", "gpuposture.io/pool": "batch"}
    assert node_pool(labels) == "batch"
