"""Patch status of nodes without GPU capacity (DESIGN §8): a node known to hold no GPU has
nothing to patch (null, never `?patch_status=unknown`); one that something says may hold GPUs
stays unknown, saying what; the patch page and the checklist count GPU nodes only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from inventory.bulletins.store import bulletins_import_paths
from inventory.models import Node
from inventory.selectors import patch_overview
from inventory.services import cluster_sync_from_snapshot
from inventory.sync import cluster_get_or_create
from posture.selectors import checklist_facts
from tests.conftest import api_client
from tests.inventory.test_components import operator_cluster
from tests.posture.dra_world import resource_slice
from tests.realworld import realworld

pytestmark = pytest.mark.django_db

CPU = {"cpu": "16", "memory": "64Gi", "pods": "110"}


def _node(name: str, labels: dict | None = None, capacity: dict | None = None) -> dict[str, Any]:
    meta = {"name": name, "labels": {"kubernetes.io/os": "linux", **(labels or {})}}
    status = {"capacity": {**CPU, **(capacity or {})}, "allocatable": {**CPU, **(capacity or {})}}
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta, "status": status}


def _pod(namespace: str, name: str, node: str, image: str) -> dict[str, Any]:
    spec = {"nodeName": node, "containers": [{"name": name.rsplit("-", 1)[0], "image": image}]}
    meta = {"name": name, "namespace": namespace}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": spec,
        "status": {"phase": "Running"},
    }


def _owned(pod: dict[str, Any], kind: str, name: str) -> dict[str, Any]:
    ref = {"apiVersion": "apps/v1", "kind": kind, "name": name, "uid": f"{name}-uid"}
    pod["metadata"]["ownerReferences"] = [{**ref, "controller": True}]
    return pod


DRA_IMAGE = "nvcr.io/nvidia/k8s-dra-driver-gpu:v25.3.0"


def _world() -> list[dict[str, Any]]:
    """The three H100 nodes of operator_cluster, and nodes without GPU capacity."""
    return [
        *operator_cluster(),
        # The operator's namespace holds bare pods too (below), so its images alone do not make
        # it the platform's (stack_namespaces): the label does, and its pods give the versions.
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "gpu-operator", "labels": {"gpuposture.io/platform": "true"}},
        },
        # Known to hold no GPU: a CPU worker with the usual add-ons; a control-plane node
        # running the GPU Operator's controller (scheduled anywhere: no sign of a GPU).
        _node("cpu-1"),
        _pod("calico-system", "calico-node-x1", "cpu-1", "docker.io/calico/node:v3.29.1"),
        _pod("monitoring", "node-exporter-x1", "cpu-1", "quay.io/prometheus/node-exporter:v1.8.2"),
        _node("cp-1", {"node-role.kubernetes.io/control-plane": ""}),
        _pod("gpu-operator", "gpu-operator-7d9f-x1", "cp-1", "nvcr.io/nvidia/gpu-operator:v25.3.2"),
        # The DRA driver's controller (a Deployment's pod, scheduled anywhere) is no sign either;
        # its kubelet plugin (a DaemonSet's pod, on the nodes it serves) is one (plug-1).
        _owned(
            _pod("nvidia-dra-driver-gpu", "nvidia-dra-driver-gpu-controller-x1", "cp-1", DRA_IMAGE),
            "ReplicaSet",
            "nvidia-dra-driver-gpu-controller-6c9f7b",
        ),
        _node("plug-1"),
        _owned(
            _pod(
                "nvidia-dra-driver-gpu",
                "nvidia-dra-driver-gpu-kubelet-plugin-x1",
                "plug-1",
                DRA_IMAGE,
            ),
            "DaemonSet",
            "nvidia-dra-driver-gpu-kubelet-plugin",
        ),
        # Something says these may hold GPUs though their capacity shows none.
        _node("waiting-1", {"nvidia.com/gpu.present": "true"}),
        _node("zero-1", capacity={"nvidia.com/gpu": "0"}),
        _node("drv-1"),
        _pod(
            "gpu-operator",
            "nvidia-driver-daemonset-x1",
            "drv-1",
            "nvcr.io/nvidia/driver:570.172.08-ubuntu22.04",
        ),
        _node("amd-1", capacity={"amd.com/gpu": "1"}),
        _node("dra-1"),
        resource_slice("dra-1"),
    ]


def _sync(tmp_path: Path) -> None:
    path = tmp_path / "lab.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": _world()}))
    cluster_sync_from_snapshot(
        cluster=cluster_get_or_create(name="lab"), paths=[path], remember=False
    )
    bulletins_import_paths(
        paths=[str(realworld("csaf", f"nvidia-{n}.json")) for n in ("5670", "5857")]
    )


MAYBE_GPU = {"waiting-1", "zero-1", "drv-1", "amd-1", "plug-1"}


def test_a_node_known_to_hold_no_gpu_has_no_patch_status(tmp_path, personas):
    _sync(tmp_path)
    client = api_client(personas["auditor"])
    nodes = {n["name"]: n for n in client.get("/api/v1/nodes/?cluster=lab").json()["results"]}
    assert (nodes["cpu-1"]["patch_status"], nodes["cp-1"]["patch_status"]) == (None, None)
    assert nodes["cpu-1"]["patch_notes"] == []
    unknown = client.get("/api/v1/nodes/?cluster=lab&patch_status=unknown").json()["results"]
    # gpu-c: its DCGM exporter's version is unknown (a GPU node stays unknown).
    assert {n["name"] for n in unknown} == {"gpu-c", *MAYBE_GPU}


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("waiting-1", "GPU labels nvidia.com/gpu.present"),
        ("zero-1", "its capacity lists nvidia.com/gpu=0"),
        ("drv-1", "pod gpu-operator/nvidia-driver-daemonset-x1 runs driver"),
        ("plug-1", "pod nvidia-dra-driver-gpu/nvidia-dra-driver-gpu-kubelet-plugin-x1 runs"),
        # Another vendor's GPU is no "no GPU capacity": the note says what it holds.
        ("amd-1", "holds AMD accelerators (amd.com/gpu: 1): the AMD stack is not read"),
    ],
)
def test_a_node_something_says_may_hold_gpus_stays_unknown_and_says_why(tmp_path, name, says):
    _sync(tmp_path)
    node = Node.objects.get(name=name)
    assert node.patch_status == "unknown" and not node.is_gpu_node
    (note,) = node.patch_notes
    assert note.startswith("holds " if name == "amd-1" else "no GPU capacity, but ")
    assert says in note


def test_the_patch_page_and_the_checklist_count_gpu_nodes_only(tmp_path, personas):
    _sync(tmp_path)
    user = personas["auditor"]
    counts = patch_overview(user)["pools"]
    total = sum(c["current"] + c["below_baseline"] + c["unknown"] for c in counts.values())
    # gpu-a, gpu-b, gpu-c, and dra-1: a node whose GPUs a ResourceSlice publishes (a DRA node
    # never has nvidia.com/gpu capacity) is a GPU node.
    assert total == 4
    assert checklist_facts(Node.objects.first().cluster, user).gpu_nodes == 4


def test_a_node_whose_gpus_a_resource_slice_publishes_is_judged_on_its_slices_driver(tmp_path):
    _sync(tmp_path)
    node = Node.objects.get(name="dra-1")
    assert node.is_gpu_node and node.gpu_count == 4
    # Its slice's driverVersion 570.133.20 (no GFD label) is below the Jul 2025 R570 fix.
    assert (node.driver_version, node.patch_status) == ("570.133.20", "below_baseline")
    assert not any(n.startswith("no GPU capacity") for n in node.patch_notes)


def test_a_node_stored_before_its_signs_were_read_stays_unknown(tmp_path):
    _sync(tmp_path)
    from inventory.bulletins.patch_refresh import nodes_patch_refresh

    node = Node.objects.get(name="cpu-1")
    node.data.pop("gpu_signs")
    node.save()
    nodes_patch_refresh()
    node.refresh_from_db()
    assert node.patch_status == "unknown" and "not read" in node.patch_notes[0]
