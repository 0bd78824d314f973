"""Two inventory facts, read as a sync stores them (our own cluster `lab-east`):

- a workload's `gpu_resources` lists what its pod holds: a pod the scheduler could not place
  (Pending, PodScheduled=False, no node) asks for a GPU but holds none, so it reads `{}` until
  it is bound (rtconfidential k42); rows stored before are cleared by migration 0032;
- a container-mode node whose GPUs are half bound to vfio-pci for KubeVirt VMs (a standalone
  kubevirt-gpu-device-plugin advertising them one resource each beside NVIDIA's device plugin)
  counts them all: GFD's `nvidia.com/gpu.count` is NVML's count, which never sees a vfio-bound
  GPU, so `gpu_count` is the sum and `gpu_count_basis` names both (k44), while the GPUs pods
  reach through nvidia.com/gpu stay the driver's."""

from __future__ import annotations

import importlib
import json
from typing import Any

import pytest
from django.apps import apps

from inventory.models import Pod
from inventory.sources.normalise import normalise
from posture.inputs import PostureInputs
from posture.rules.env_holdings import env_accesses
from tests.conftest import api_client
from tests.posture.builders import tenant
from tests.posture.gpu_access_world import container, node, pod

VFIO = "nvidia.com/GA100_A100_SXM4_80GB"


def _mixed_node() -> dict[str, Any]:
    """GFD counts the 2 GPUs its driver holds; 2 more are vfio-bound for VMs."""
    return node("gpu-mix", gpus=2, capacity={"nvidia.com/gpu": "2", VFIO: "2"})


def _queued() -> dict[str, Any]:
    found = pod("batch", "sweep-7q2kd", container(gpu={"nvidia.com/gpu": "1"}), node_name=None)
    found["status"] = {
        "phase": "Pending",
        "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
    }
    return found


def _objects() -> list[dict[str, Any]]:
    return [
        _mixed_node(),
        _queued(),
        pod("batch", "sweep-bound", container(gpu={"nvidia.com/gpu": "1"}), node_name="gpu-mix"),
    ]


@pytest.fixture
def lab(db, tmp_path):
    from inventory.services import cluster_sync_from_snapshot
    from inventory.sync import cluster_get_or_create

    path = tmp_path / "lab.json"
    path.write_text(json.dumps({"kind": "List", "items": _objects()}))
    cluster_sync_from_snapshot(cluster=cluster_get_or_create(name="lab-east"), paths=[str(path)])


def _workloads(personas) -> dict[str, dict[str, Any]]:
    lead = api_client(personas["security_lead"])
    rows = lead.get("/api/v1/workloads/?cluster=lab-east&page_size=100").json()["results"]
    return {r["name"]: r for r in rows}


def test_an_unscheduled_pod_holds_no_gpu(lab, personas):
    rows = _workloads(personas)
    queued = rows["sweep-7q2kd"]
    assert (queued["phase"], queued["node"], queued["gpu_resources"]) == ("Pending", None, {})
    assert rows["sweep-bound"]["gpu_resources"] == {"nvidia.com/gpu": 1}


def test_rows_stored_before_are_cleared(lab, personas):
    Pod.objects.update(gpu_resources={"nvidia.com/gpu": 1})  # as the sync stored them before
    migration = importlib.import_module("inventory.migrations.0032_pod_gpu_resources_bound_only")
    migration.unbound_hold_none(apps, None)
    stored = dict(Pod.objects.values_list("name", "gpu_resources"))
    assert stored == {"sweep-7q2kd": {}, "sweep-bound": {"nvidia.com/gpu": 1}}


def test_the_nodes_api_counts_the_vfio_bound_gpus(lab, personas):
    lead = api_client(personas["security_lead"])
    (row,) = lead.get("/api/v1/nodes/?cluster=lab-east").json()["results"]
    assert row["gpu_count"] == 4
    basis = row["gpu_count_basis"]
    assert "nvidia.com/gpu.count=2" in basis and f"{VFIO}=2" in basis and "vfio-pci" in basis


def test_the_gpus_pods_reach_through_the_driver_stay_the_drivers():
    """`NVIDIA_VISIBLE_DEVICES=all` under runc reaches the 2 driver-held GPUs, not 4."""
    every = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]
    probe = pod("batch", "probe", container(env=every), node_name="gpu-mix")
    snapshot = normalise([_mixed_node(), probe])
    (read,) = snapshot.nodes
    assert (read.gpu_count, read.passthrough_gpus, read.container_gpus) == (4, 2, 2)
    inputs = PostureInputs(cluster="t", snapshot=snapshot, tenants=(tenant("batch"),))
    (access,) = env_accesses(inputs, read)
    assert access.devices == ("gpu-index:0", "gpu-index:1")


@pytest.mark.parametrize(
    ("labels", "count", "vfio"),
    [
        # No GFD count (a cloud's would count every GPU of the instance): nothing is summed.
        ({"nvidia.com/gpu.count": ""}, None, 0),
        # A node given wholly to VMs is counted by its passthrough capacity, as before.
        ({"nvidia.com/gpu.workload.config": "vm-passthrough"}, 2, 0),
    ],
)
def test_only_gfds_count_beside_vfio_bound_gpus_is_summed(labels, count, vfio):
    """The sum is of two disjoint counts: NVML's (GFD's label) and the vfio-bound GPUs."""
    found = node("gpu-x", gpus=2, capacity={VFIO: "2"}, labels=labels)
    if labels.get("nvidia.com/gpu.count") == "":
        found["metadata"]["labels"].pop("nvidia.com/gpu.count")
        found["status"]["capacity"]["nvidia.com/gpu"] = "2"
    (read,) = normalise([found]).nodes
    assert (read.gpu_count, read.passthrough_gpus) == (count, vfio)
