"""AMD GPUs allocated by AMD's DRA driver (gpu.amd.com): holdings like NVIDIA's, so two tenants
on one AMD device are co-tenants (SHARE-001) and share LeftoverLocals-affected memory
(LEAK-002); compute partitions of one GPU are compute instances of it (mig_ci), as the device
plugin's (SHARE-002, SHARE-003, LEAK-002). Devices are spelled as the driver publishes them
(type amdgpu for a whole GPU, amdgpu-partition for a partition, computePartition on an
auto-partition device; no uuid), in our own objects; the node carries no AMD labeller labels,
as a DRA-only node need not."""

from __future__ import annotations

from typing import Any

from inventory.dra_devices import DraIndex, dra_gpu_nodes
from posture.rules.registry import run_checks
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


def _world(devices: list[dict], *objects: dict, tenants=TENANTS):
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": NODE, "labels": {"kubernetes.io/hostname": NODE}},
        "status": {"capacity": {"cpu": "96"}},
    }
    spaces = [namespace(t.slug) for t in tenants] + [namespace("kube-system")]
    return world([*spaces, node, amd_class(), amd_slice(devices), *objects], tenants)


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


def test_whole_amd_gpus_of_their_own_are_not_shared():
    inputs = _two("gpu-0-128", "gpu-1-136")
    assert run("LEAK-002", inputs) == []
    assert run("SHARE-001", inputs) == []
    assert run("SHARE-002", inputs) == [] and run("SHARE-003", inputs) == []


# --- compute partitions: compute instances of one GPU, as under the device plugin -----------

EXT = tenant("ext", "external")
BUS = "resource.kubernetes.io/pciBusID"


def partition(name: str, bus: str | None = None, **attributes: str) -> dict[str, Any]:
    """A pre-partitioned GPU's partition, naming its parent GPU's PCI address where `bus`."""
    device = amd_device(name, "amdgpu-partition", partitionProfile="cpx_nps1", **attributes)
    if bus:
        device["attributes"][BUS] = {"string": bus}
    return device


def auto_device(name: str, compute: str, memory: str = "nps1") -> dict[str, Any]:
    kind = "amdgpu" if compute == "spx" else "amdgpu-partition"
    return amd_device(name, kind, computePartition=compute, memoryPartition=memory)


def test_tenants_on_one_auto_partition_device_share_its_gpu_for_certain():
    """Auto-partition: gpu-0-cpx-nps1 stands for the eight CPX partitions of GPU 0, each claim
    consuming one of its `partitions`. Two claims on it are two partitions of one GPU: compute
    instances of it (sharing its memory under NPS1), never separate instances. They had read
    as partitions of their own (`exclusive`): no co-tenancy finding at all, only POD-009."""
    inputs = _world(
        [auto_device("gpu-0-cpx-nps1", "cpx")],
        amd_claim("alpha", "train", "gpu-0-cpx-nps1", ["train-0"]),
        amd_claim("ext", "probe", "gpu-0-cpx-nps1", ["probe-0"]),
        dra_pod("alpha", "train-0", "train", node_name=NODE),
        dra_pod("ext", "probe-0", "probe", node_name=NODE),
        tenants=(tenant("alpha", "internal"), EXT),
    )
    index = DraIndex(inputs.snapshot)
    (held,) = index.held_devices(index.claims["alpha", "train"])
    assert held.mode == "mig_ci" and "share its memory (NPS1)" in held.basis
    (draft,) = run("SHARE-002", inputs)
    assert draft.tenants == ("alpha", "ext")
    assert draft.title == (
        "Tenants alpha and ext use compute partitions (amd.com/cpx_nps1) of AMD GPUs in node "
        "mi300-a (certain co-residence)"
    )
    assert draft.evidence["vendor"] == "AMD"
    (forbidden,) = run("SHARE-003", inputs)
    assert forbidden.tenants == ("alpha", "ext") and "mig_ci" in forbidden.title
    (leak,) = run("LEAK-002", inputs)
    assert leak.tenants == ("alpha", "ext") and leak.evidence["co_residence"] == "certain"
    assert run("SHARE-001", inputs) == []  # not time-slicing: a partition each


def test_partitions_naming_one_parent_gpu_meet_for_certain_and_different_ones_do_not():
    same = [partition("gpu-2-144", "0000:19:00.0"), partition("gpu-3-152", "0000:19:00.0")]
    inputs = _two("gpu-2-144", "gpu-3-152", same)
    (draft,) = run("SHARE-002", inputs)
    assert draft.tenants == ("alpha", "beta") and draft.evidence["co_residence"] == "certain"
    assert "0000:19:00.0" in str(draft.evidence["nodes"])
    assert [d.tenants for d in run("SHARE-003", inputs)] == [("alpha", "beta")]
    (leak,) = run("LEAK-002", inputs)
    assert leak.evidence["co_residence"] == "certain"
    apart = [partition("gpu-2-144", "0000:19:00.0"), partition("gpu-3-152", "0000:1a:00.0")]
    inputs = _two("gpu-2-144", "gpu-3-152", apart)
    for check_id in ("SHARE-002", "SHARE-003", "LEAK-002", "SHARE-001"):
        assert run(check_id, inputs) == [], check_id


def test_partitions_whose_parent_gpu_is_not_published_may_share_one():
    unnamed = [partition("gpu-2-144"), partition("gpu-3-152")]
    inputs = _two("gpu-2-144", "gpu-3-152", unnamed)
    (draft,) = run("SHARE-002", inputs)
    assert draft.tenants == ("alpha", "beta") and draft.evidence["co_residence"] == "possible"
    assert [d.tenants for d in run("SHARE-003", inputs)] == [("alpha", "beta")]
    (leak,) = run("LEAK-002", inputs)
    assert leak.tenants == ("alpha", "beta")
    assert leak.evidence["co_residence"].startswith("possible")
    assert "may share partitions" in leak.title
    assert run("SHARE-001", inputs) == []
    # One side's parent named, the other's not: still possibly the same GPU.
    inputs = _two("gpu-2-144", "gpu-3-152", [partition("gpu-2-144", "0000:19:00.0"), unnamed[1]])
    assert [d.evidence["co_residence"] for d in run("SHARE-002", inputs)] == ["possible"]
    assert len(run("LEAK-002", inputs)) == 1


def test_one_tenants_partitions_and_spx_gpus_raise_nothing():
    shared = {"SHARE-001", "SHARE-002", "SHARE-003", "SHARE-004", "SHARE-007", "LEAK-002"}
    # alpha's two partitions of one GPU; beta's whole GPU beside them.
    devices = [*(partition(f"gpu-0-{n}", "0000:19:00.0") for n in (128, 129)), *WHOLE[1:]]
    inputs = _world(
        devices,
        amd_claim("alpha", "train", "gpu-0-128", ["train-0"]),
        amd_claim("alpha", "eval", "gpu-0-129", ["eval-0"]),
        amd_claim("beta", "probe", "gpu-1-136", ["probe-0"]),
        dra_pod("alpha", "train-0", "train", node_name=NODE),
        dra_pod("alpha", "eval-0", "eval", node_name=NODE),
        dra_pod("beta", "probe-0", "probe", node_name=NODE),
    )
    assert {d.check_id for d in run_checks(inputs)} & shared == set()
    # SPX auto-partition devices: each a whole GPU, one tenant's.
    spx = [auto_device("gpu-0-spx-nps1", "spx"), auto_device("gpu-1-spx-nps1", "spx")]
    inputs = _two("gpu-0-spx-nps1", "gpu-1-spx-nps1", spx)
    index = DraIndex(inputs.snapshot)
    assert index.held_devices(index.claims["alpha", "train"])[0].mode == "exclusive"
    assert {d.check_id for d in run_checks(inputs)} & shared == set()


def test_a_node_whose_slices_publish_amd_gpus_is_a_gpu_node():
    inputs = _two("gpu-0-128", "gpu-1-136")
    assert dra_gpu_nodes(inputs.snapshot) == {NODE}
