"""A node no device plugin serves reads no device-plugin config (DESIGN §2: its GPUs reach pods
through DRA claims, and a whole-device claim is exclusive).

The shape (red-team rtgb200 k02/k34, minimised): the GPU Operator (its Deployment and the
ClusterRoleBinding of its service account) with a ClusterPolicy naming ConfigMap
time-slicing-config and no default; that ConfigMap holds one key, l4-ts (time-slicing, 4
replicas); the Operator's plugin runs on ts-1 only, labelled for l4-ts. dra-1 is a DRA node: the
Operator's deploy label says false, no plugin pod is there, and its one GPU is held whole by one
tenant's claim. Before, the plugin's "only key" fallback was applied to dra-1 too: it read
time-slicing with 4 replicas, its GPUs were listed time-sliced, and SHARE-005 counted it among
the nodes using l4-ts and charged its tenant.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from inventory.services import cluster_sync_from_snapshot
from inventory.sources.normalise import normalise
from inventory.sync import cluster_get_or_create
from posture.inputs import PostureInputs
from tests.conftest import api_client
from tests.inventory.normalise_helpers import (
    TIME_SLICING_LOOSE,
    configmap,
    controller,
    ctr,
    node,
    pod,
)
from tests.posture.builders import run, tenant
from tests.posture.dra_world import claim, device_class, dra_pod, resource_slice

OPERATOR = "gpu-operator"
CONFIGS, KEY = "time-slicing-config", "l4-ts"
USED = f"{OPERATOR}/{CONFIGS}:{KEY}"
PLUGIN_DS = "nvidia-device-plugin-daemonset"
PLUGIN_IMAGE = "nvcr.io/nvidia/k8s-device-plugin:v0.17.3"
DEPLOY = "nvidia.com/gpu.deploy.device-plugin"
L4 = {
    "nvidia.com/gpu.product": "NVIDIA-L4-SHARED",
    "nvidia.com/gpu.count": "1",
    "nvidia.com/gpu.replicas": "4",
    "nvidia.com/gpu.sharing-strategy": "time-slicing",
}
TENANTS = (tenant("alpha", "external", namespaces=("alpha",)),)


def _operator() -> list[dict[str, Any]]:
    deployment = controller(
        "Deployment", OPERATOR, "gpu-operator", "nvcr.io/nvidia/gpu-operator:v25.3.4"
    )
    deployment["spec"]["template"]["spec"]["serviceAccountName"] = "gpu-operator"
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "gpu-operator"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "x"},
        "subjects": [{"kind": "ServiceAccount", "name": "gpu-operator", "namespace": OPERATOR}],
    }
    policy = {
        "apiVersion": "nvidia.com/v1",
        "kind": "ClusterPolicy",
        "metadata": {"name": "cluster-policy"},
        "spec": {"devicePlugin": {"enabled": True, "config": {"name": CONFIGS, "default": ""}}},
    }
    return [deployment, binding, policy, configmap(OPERATOR, CONFIGS, {KEY: TIME_SLICING_LOOSE})]


def _plugin_pod(node_name: str) -> dict[str, Any]:
    plugin = pod(
        OPERATOR, f"{PLUGIN_DS}-{node_name}", ctr(PLUGIN_DS, PLUGIN_IMAGE), node_name=node_name
    )
    plugin["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": PLUGIN_DS, "controller": True}
    ]
    return plugin


def _world(dra_labels: dict[str, str], *, node_selector: dict[str, str] | None = None) -> list:
    plugin = controller("DaemonSet", OPERATOR, PLUGIN_DS, PLUGIN_IMAGE)
    if node_selector:
        plugin["spec"]["template"]["spec"]["nodeSelector"] = node_selector
    ts = {**L4, "nvidia.com/device-plugin.config": KEY, **(node_selector or {})}
    return [
        {"kind": "Namespace", "metadata": {"name": "alpha"}},
        *_operator(),
        plugin,
        node("ts-1", ts, capacity={"nvidia.com/gpu": "4"}),
        _plugin_pod("ts-1"),
        pod(
            "alpha",
            "serve",
            ctr("serve", resources={"limits": {"nvidia.com/gpu": "1"}}),
            node_name="ts-1",
        ),
        node("dra-1", dra_labels, capacity={"cpu": "8"}),
        device_class(),
        resource_slice("dra-1"),
        claim("alpha", "whole", ["gpu-0"], reserved_for=["train"], node="dra-1"),
        dra_pod("alpha", "train", "whole", node_name="dra-1"),
    ]


def _snapshot(objects: list[dict[str, Any]]):
    return normalise(objects, configured_platform=(OPERATOR,))


def _node(snapshot, name: str):
    return next(n for n in snapshot.nodes if n.name == name)


def test_a_dra_node_the_operator_keeps_its_plugin_off_reads_no_plugin_config():
    snapshot = _snapshot(_world({DEPLOY: "false"}))
    dra = _node(snapshot, "dra-1")
    assert (dra.sharing_strategy, dra.time_slicing_replicas) == ("none", None)
    assert dra.device_plugin_config_used == ""
    assert "no device plugin runs on the node" in dra.sharing_basis
    assert f"{DEPLOY}=false" in dra.sharing_basis
    assert not [p for p in dra.unreadable_configs if p.purpose == "device_plugin"]
    # The node the plugin serves keeps the config its label names.
    ts = _node(snapshot, "ts-1")
    assert (ts.sharing_strategy, ts.time_slicing_replicas) == ("time_slicing", 4)
    assert ts.device_plugin_config_used == USED


def test_share005_counts_only_the_nodes_that_read_the_key_and_their_tenants():
    snapshot = _snapshot(_world({DEPLOY: "false"}))
    (draft,) = run("SHARE-005", PostureInputs("c", snapshot, TENANTS))
    assert draft.evidence["nodes_using_it"] == ["ts-1"]
    assert draft.evidence["node_count"] == 1


def test_a_dra_node_the_plugin_daemonset_does_not_select_reads_no_plugin_config():
    # The Operator's own plugin DaemonSet selects its deploy label "true"; dra-1 has none.
    snapshot = _snapshot(_world({}, node_selector={DEPLOY: "true"}))
    dra = _node(snapshot, "dra-1")
    assert (dra.sharing_strategy, dra.device_plugin_config_used) == ("none", "")
    assert f"DaemonSet {OPERATOR}/{PLUGIN_DS}" in dra.sharing_basis
    assert _node(snapshot, "ts-1").device_plugin_config_used == USED


def test_an_unlabelled_node_the_plugin_runs_on_keeps_the_only_key_fallback():
    # Regression guard: where the plugin runs and the node names no key, config-manager falls
    # back to the only key, so the config is in force there.
    unlabelled = node("ts-2", L4, capacity={"nvidia.com/gpu": "4"})
    snapshot = _snapshot([*_world({DEPLOY: "false"}), unlabelled, _plugin_pod("ts-2")])
    ts2 = _node(snapshot, "ts-2")
    assert (ts2.sharing_strategy, ts2.time_slicing_replicas) == ("time_slicing", 4)
    assert ts2.device_plugin_config_used == USED


def test_dra_time_slicing_still_shares_a_node_no_plugin_serves():
    shared = [
        claim(
            "alpha", "ts-a", ["gpu-1"], sharing="TimeSlicing", reserved_for=["a-0"], node="dra-1"
        ),
        claim(
            "alpha", "ts-b", ["gpu-1"], sharing="TimeSlicing", reserved_for=["a-1"], node="dra-1"
        ),
        dra_pod("alpha", "a-0", "ts-a", node_name="dra-1"),
        dra_pod("alpha", "a-1", "ts-b", node_name="dra-1"),
    ]
    dra = _node(_snapshot([*_world({DEPLOY: "false"}), *shared]), "dra-1")
    # DRA's time-slicing has no replica count; none comes from the plugin's config.
    assert (dra.sharing_strategy, dra.time_slicing_replicas) == ("time_slicing", None)
    assert "DRA: ResourceClaim alpha/ts-a" in dra.sharing_basis


@pytest.mark.django_db
def test_the_gpus_api_lists_the_dra_nodes_gpu_unshared(tmp_path, personas):
    path = tmp_path / "lab.json"
    items = _world({DEPLOY: "false"})
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    cluster_sync_from_snapshot(
        cluster=cluster_get_or_create(name="lab"), paths=[path], remember=False
    )
    rows = api_client(personas["auditor"]).get("/api/v1/gpus/?cluster=lab&node=dra-1").json()
    modes = {(r["sharing_strategy"], r["time_slicing_replicas"]) for r in rows["results"]}
    assert len(rows["results"]) == 4 and modes == {("none", None)}
