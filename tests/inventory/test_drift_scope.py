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
