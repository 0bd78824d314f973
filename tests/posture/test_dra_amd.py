"""AMD GPUs allocated by AMD's DRA driver (gpu.amd.com): holdings like NVIDIA's, so two tenants
on one AMD device are co-tenants (SHARE-001) and share LeftoverLocals-affected memory
(LEAK-002). Devices are spelled as the driver publishes them (type amdgpu for a whole GPU,
amdgpu-partition for a partition, computePartition on an auto-partition device; no uuid), in
our own objects; the node carries no AMD labeller labels, as a DRA-only node need not."""

from __future__ import annotations

from typing import Any

from inventory.dra_devices import dra_gpu_nodes
from tests.posture.builders import tenant
from tests.posture.dra_world import V1, dra_pod
from tests.posture.gpu_access_world import namespace, run, world

AMD = "gpu.amd.com"
NODE = "mi300-a"
ALPHA, BETA = tenant("alpha", "internal_trusted"), tenant("beta", "internal_trusted")
TENANTS = (ALPHA, BETA)


def amd_device(name: str, kind: str = "amdgpu", **attributes: str) -> dict[str, Any]:
    values = {"type": kind, "productName": "AMD Instinct MI300X", **attributes}
    return {
        "name": name,
        "attributes": {k: {"string": v} for k, v in values.items()},
        "capacity": {"memory": {"value": "192Gi"}},
    }


def amd_slice(devices: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": V1,
        "kind": "ResourceSlice",
        "metadata": {"name": f"{NODE}-{AMD}-q7x2v"},
        "spec": {
            "driver": AMD,
            "nodeName": NODE,
            "pool": {"name": NODE, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def amd_claim(ns: str, name: str, device: str, pods: list[str], admin: bool = False) -> dict:
    exactly: dict[str, Any] = {"deviceClassName": AMD, "allocationMode": "ExactCount"}
    exactly |= {"adminAccess": True} if admin else {"count": 1}
    result = {"request": "gpu", "driver": AMD, "pool": NODE, "device": device}
    return {
        "apiVersion": V1,
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": ns, "uid": f"uid-{name}"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}},
        "status": {
            "allocation": {
                "devices": {"results": [result | ({"adminAccess": True} if admin else {})]}
            },
            "reservedFor": [{"resource": "pods", "name": p, "uid": f"uid-{p}"} for p in pods],
        },
    }


def amd_class() -> dict[str, Any]:
    return {
        "apiVersion": V1,
        "kind": "DeviceClass",
        "metadata": {"name": AMD},
        "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{AMD}'"}}]},
    }


def _world(devices: list[dict], *objects: dict):
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": NODE, "labels": {"kubernetes.io/hostname": NODE}},
        "status": {"capacity": {"cpu": "96"}},
    }
    base = [namespace("alpha"), namespace("beta"), namespace("kube-system"), node, amd_class()]
    return world([*base, amd_slice(devices), *objects], TENANTS)


WHOLE = [amd_device("gpu-0-128"), amd_device("gpu-1-136")]


def _two(device_a: str, device_b: str, devices: list[dict] = WHOLE, admin_b: bool = False):
    return _world(
        devices,
        amd_claim("alpha", "train", device_a, ["train-0"]),
        amd_claim("beta", "probe", device_b, ["probe-0"], admin=admin_b),
        dra_pod("alpha", "train-0", "train", node_name=NODE),
        dra_pod("beta", "probe-0", "probe", node_name=NODE),
    )


def test_two_tenants_claims_on_one_amd_gpu_share_it():
    inputs = _two("gpu-0-128", "gpu-0-128")
    (leak,) = run("LEAK-002", inputs)
    assert leak.tenants == ("alpha", "beta")
    assert leak.evidence["affected_by"]["vendor"] == "AMD"
    assert "ResourceSlice gpu.amd.com" in leak.evidence["affected_by"]["source"]
    how = {t["tenant"]: t["reaches_gpus_by"] for t in leak.evidence["tenants_on_node"]}
    assert "dra:gpu.amd.com/mi300-a/gpu-0-128" in how["alpha"]
    assert "allocated to 2 claims" in how["beta"]
    # Both on one AMD GPU at once with nothing isolating them: time-slicing co-tenancy.
    (share,) = run("SHARE-001", inputs)
    assert share.tenants == ("alpha", "beta")


def test_a_tenants_admin_access_claim_on_anothers_amd_gpu_shares_it():
    (leak,) = run("LEAK-002", _two("gpu-0-128", "gpu-0-128", admin_b=True))
    assert leak.tenants == ("alpha", "beta")
    how = {t["tenant"]: t["reaches_gpus_by"] for t in leak.evidence["tenants_on_node"]}
    assert "adminAccess" in how["beta"]


def test_a_platform_monitoring_admin_claim_shares_nothing():
    inputs = _world(
        WHOLE,
        amd_claim("alpha", "train", "gpu-0-128", ["train-0"]),
        amd_claim("kube-system", "watch", "gpu-0-128", ["watch-0"], admin=True),
        dra_pod("alpha", "train-0", "train", node_name=NODE),
        dra_pod("kube-system", "watch-0", "watch", node_name=NODE),
    )
    assert run("LEAK-002", inputs) == []
    assert run("SHARE-001", inputs) == []


def test_whole_amd_gpus_and_partitions_of_their_own_are_not_shared():
    partitions = [
        amd_device("gpu-2-144", "amdgpu-partition", partitionProfile="cpx_nps4"),
        amd_device("gpu-3-152", "amdgpu-partition", partitionProfile="cpx_nps4"),
    ]
    for inputs in (_two("gpu-0-128", "gpu-1-136"), _two("gpu-2-144", "gpu-3-152", partitions)):
        assert run("LEAK-002", inputs) == []
        assert run("SHARE-001", inputs) == []


def test_claims_on_one_auto_partition_device_each_get_a_partition_of_their_own():
    # Auto-partition: gpu-0-cpx-nps4 stands for the GPU's eight CPX partitions, a consumable
    # capacity each claim takes one of; two claims on it are two partitions, not one device.
    auto = [amd_device("gpu-0-cpx-nps4", "amdgpu-partition", computePartition="cpx")]
    inputs = _two("gpu-0-cpx-nps4", "gpu-0-cpx-nps4", auto)
    assert run("LEAK-002", inputs) == []
    assert run("SHARE-001", inputs) == []


def test_a_node_whose_slices_publish_amd_gpus_is_a_gpu_node():
    inputs = _two("gpu-0-128", "gpu-1-136")
    assert dra_gpu_nodes(inputs.snapshot) == {NODE}
