"""Drift compares only the kinds both syncs read: a snapshot that lacks some kinds reports no
DRIFT- change about them (inventory.drift_scope)."""

from __future__ import annotations

import copy
import json

import pytest

from inventory import snapshot as snap
from inventory.drift import ClusterState, detect_drift
from inventory.drift_scope import read_in_both
from inventory.models import DriftEvent
from inventory.services import cluster_sync_from_snapshot
from tests.conftest import load_json


def operator(tag: str = "v24.9.2") -> snap.Workload:
    image = f"nvcr.io/nvidia/gpu-operator:{tag}"
    return snap.Workload(
        "Deployment", "gpu-operator", "gpu-operator", images={"c": image}, spec_hash=tag
    )


def policy() -> snap.GpuOperatorPolicy:
    return snap.GpuOperatorPolicy(name="cluster-policy", spec={"cdi_enabled": False}, spec_hash="a")


def config() -> snap.SharingConfig:
    return snap.SharingConfig(
        namespace="gpu-operator", configmap="tsc", key="ts-4", mode="time_slicing", replicas=4
    )


FULL = ClusterState(
    sharing_configs=(config(),), workloads=(operator(),), operator_policies=(policy(),)
)


def test_kinds_one_sync_did_not_read_are_not_compared():
    nodes_and_pods = ClusterState()  # a snapshot of nodes and pods only
    before, after = read_in_both(FULL, nodes_and_pods, {"Node", "Pod"})
    assert detect_drift(before, after) == []
    # Without the scope, the objects not read read as removed.
    assert {c.subject_kind for c in detect_drift(FULL, nodes_and_pods)} == {
        "ConfigMap",
        "Deployment",
        "ClusterPolicy",
    }


def test_kinds_both_syncs_read_are_still_compared():
    upgraded = ClusterState(
        sharing_configs=(config(),), workloads=(operator("v25.3.0"),), operator_policies=()
    )
    read = {"Node", "Pod", "ConfigMap", "Deployment", "ClusterPolicy"}
    before, after = read_in_both(FULL, upgraded, read)
    changes = {(c.subject_kind, c.summary) for c in detect_drift(before, after)}
    assert ("Deployment", "Deployment gpu-operator/gpu-operator pod spec changed") in changes
    assert any(kind == "ClusterPolicy" for kind, _ in changes)  # read by both: removed


def write(tmp_path, name: str, keep) -> str:
    items = [o for o in copy.deepcopy(load_json("small-cluster.json")["items"]) if keep(o)]
    path = tmp_path / name
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return str(path)


@pytest.mark.django_db
def test_a_nodes_and_pods_snapshot_after_a_full_one_raises_no_drift(small_world, tmp_path):
    path = write(tmp_path, "nodes-pods.json", lambda o: o["kind"] in ("Node", "Pod"))
    run = cluster_sync_from_snapshot(cluster=small_world, paths=[path])
    assert run.changes["drift_events"] == 0
    assert not DriftEvent.objects.filter(check_id="DRIFT-002").exists()


@pytest.mark.django_db
def test_a_snapshot_without_configmaps_after_a_full_one_raises_no_drift001(small_world, tmp_path):
    path = write(tmp_path, "no-cm.json", lambda o: o["kind"] != "ConfigMap")
    cluster_sync_from_snapshot(cluster=small_world, paths=[path])
    assert not DriftEvent.objects.filter(check_id="DRIFT-001").exists()


def gpu_node(labels: dict[str, str] | None = None, **facts) -> snap.Node:
    base = {"nvidia.com/gpu.count": "1", "nvidia.com/device-plugin.config": "any"}
    return snap.Node(
        "ts-1",
        labels=base | (labels or {}),
        gpu_capacity={"nvidia.com/gpu": 1},
        gpu_count=1,
        device_plugin_config="any",
        **facts,
    )


# The sync took these from the device-plugin config; without ConfigMaps it cannot.
FROM_CONFIG = {
    "sharing_strategy": "time_slicing",
    "time_slicing_replicas": 8,
    "device_plugin_config_used": "gpu-operator/tsc:any",
}


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (gpu_node(**FROM_CONFIG), gpu_node(device_plugin_config_used="")),
        (gpu_node(device_plugin_config_used=""), gpu_node(**FROM_CONFIG)),
    ],
)
def test_node_facts_taken_from_configmaps_are_not_compared_without_them(before, after):
    read = {"Node", "Pod"}
    assert (
        detect_drift(
            *read_in_both(ClusterState(nodes=(before,)), ClusterState(nodes=(after,)), read)
        )
        == []
    )
    # Read by both syncs, the same facts are a change.
    (change,) = detect_drift(
        *read_in_both(
            ClusterState(nodes=(before,)), ClusterState(nodes=(after,)), read | {"ConfigMap"}
        )
    )
    assert change.check_id == "DRIFT-001"


def test_node_facts_from_the_node_own_labels_are_still_compared_without_configmaps():
    before = gpu_node({"nvidia.com/gpu.replicas": "4"}, **FROM_CONFIG)
    after = gpu_node({"nvidia.com/gpu.replicas": "8"}, device_plugin_config_used="")
    (change,) = detect_drift(
        *read_in_both(ClusterState(nodes=(before,)), ClusterState(nodes=(after,)), {"Node"})
    )
    assert (change.before, change.after) == (
        {"time_slicing_replicas": 4},
        {"time_slicing_replicas": 8},
    )
