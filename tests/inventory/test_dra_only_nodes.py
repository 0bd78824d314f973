"""A node whose GPUs only DRA ResourceSlices publish (no `nvidia.com/gpu` capacity, which a
node under the NVIDIA DRA driver never has) is a GPU node: its count is the distinct GPUs its
slices publish, named, and the node-scoped checks judge it as they judge a labelled one."""

from __future__ import annotations

from typing import Any

from inventory.sources.normalise import normalise
from tests.posture.builders import tenant
from tests.posture.dra_world import (
    MIG_CLASS,
    claim,
    device_class,
    dra_pod,
    mig_device,
    resource_slice,
)
from tests.posture.gpu_access_world import OPERATOR_NS, namespace, run, world

SLICED = "TimeSlicing"


def dra_node(name: str, **labels: str) -> dict[str, Any]:
    """A node as the NVIDIA DRA driver leaves it: no GPU capacity, no gpu.count label."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "spec": {},
        "status": {"capacity": {"cpu": "96"}, "allocatable": {"cpu": "95"}},
    }


def _node(*objects: dict):
    snapshot = normalise([namespace("alpha"), *objects], configured_platform=(OPERATOR_NS,))
    (found,) = snapshot.nodes
    return found


def test_a_node_whose_gpus_only_a_resource_slice_publishes_is_a_gpu_node_of_that_count():
    found = _node(dra_node("dra-1"), device_class(), resource_slice("dra-1"))
    assert found.is_gpu_node
    assert found.gpu_count == 4
    assert "dra-1-gpu.nvidia.com-x8k2n" in found.gpu_count_basis
    assert found.gpu_signs is None


def test_mig_devices_count_their_parent_gpus_once_each():
    migs = [
        mig_device(0, "3g.40gb", "MIG-aaaa"),
        {**mig_device(0, "1g.10gb", "MIG-bbbb"), "name": "gpu-0-mig-1g.10gb-1"},
        mig_device(1, "7g.80gb", "MIG-cccc"),
    ]
    found = _node(dra_node("dra-m"), device_class(), resource_slice("dra-m", migs))
    assert found.is_gpu_node
    assert found.gpu_count == 2
    assert "ResourceSlice" in found.gpu_count_basis


def test_the_gpu_count_label_still_gives_the_count_where_there_is_one():
    labelled = dra_node("dra-3", **{"nvidia.com/gpu.count": "1"})
    found = _node(labelled, device_class(), resource_slice("dra-3"))
    assert found.gpu_count == 1
    assert "ResourceSlice" not in found.gpu_count_basis


def test_a_node_without_slices_or_capacity_stays_no_gpu_node():
    found = _node(dra_node("cpu-1"), device_class(), resource_slice("dra-1"))
    assert not found.is_gpu_node
    assert found.gpu_count is None


def test_an_untainted_dra_only_node_an_external_tenant_uses_is_k8s002():
    inputs = world(
        [
            namespace("alpha"),
            namespace("beta"),
            dra_node("bare-1"),
            device_class(),
            resource_slice("bare-1"),
            claim(
                "alpha", "a", ["gpu-0"], sharing="TimeSlicing", reserved_for=["a-0"], node="bare-1"
            ),
            claim(
                "beta", "b", ["gpu-0"], sharing="TimeSlicing", reserved_for=["b-0"], node="bare-1"
            ),
            dra_pod("alpha", "a-0", "a", node_name="bare-1"),
            dra_pod("beta", "b-0", "b", node_name="bare-1"),
        ],
        (tenant("alpha"), tenant("beta", "external")),
    )
    assert [d.tenants for d in run("SHARE-001", inputs)] == [("alpha", "beta")]
    findings = run("K8S-002", inputs)
    assert findings and any("bare-1" in str(d.evidence) for d in findings)


def _mig_world(node: dict) -> list[dict]:
    migs = [
        mig_device(0, "3g.40gb", "MIG-aaaa"),
        {**mig_device(0, "3g.40gb", "MIG-bbbb"), "name": "gpu-0-mig-3g.40gb-1"},
    ]
    return [
        namespace("beta"),
        node,
        device_class(MIG_CLASS, kind="mig"),
        resource_slice("dra-3", migs),
        claim("alpha", "a", ["gpu-0-mig-3g.40gb-0"], **MIG_CLAIM, reserved_for=["a-0"]),
        claim("beta", "b", ["gpu-0-mig-3g.40gb-1"], **MIG_CLAIM, reserved_for=["b-0"]),
        dra_pod("alpha", "a-0", "a", node_name="dra-3"),
        dra_pod("beta", "b-0", "b", node_name="dra-3"),
    ]


MIG_CLAIM = {"device_class_name": MIG_CLASS, "node": "dra-3"}


def test_a_gpu_claims_split_into_mig_devices_makes_the_node_mig():
    gfd = {"nvidia.com/gpu.count": "1", "nvidia.com/gpu.sharing-strategy": "none"}
    found = _node(*_mig_world(dra_node("dra-3", **gfd)))
    assert found.sharing_strategy == "mig"
    assert "alpha/a" in found.sharing_basis and "MIG" in found.sharing_basis


def test_a_node_the_device_plugin_gives_whole_gpus_out_on_is_not_made_mig():
    plugin = dra_node("dra-3", **{"nvidia.com/gpu.count": "1"})
    plugin["status"]["capacity"]["nvidia.com/gpu"] = "1"
    plugin["status"]["allocatable"]["nvidia.com/gpu"] = "1"
    assert _node(*_mig_world(plugin)).sharing_strategy == "none"
