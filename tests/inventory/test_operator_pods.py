"""The GPU Operator's namespace found from its pods where the snapshot holds no Deployment or
DaemonSet (`kubectl get nodes,pods,namespaces`): its own pod is the same evidence as its
Deployment, held to the same safeguards (never a name alone, never a claimed namespace)
(rtedge k47, k48: an export whose operator pod had no pod-template-hash label made the
namespace "more than the GPU stack", and its operands unclassified)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from inventory.platform import cluster_platform_namespaces
from inventory.services import cluster_sync_from_snapshot
from inventory.sources.normalise import normalise
from inventory.sync import cluster_get_or_create
from posture.inputs import PostureInputs, TenantInfo
from posture.rules import CHECKS
from tests.posture.builders import trust_class
from tests.posture.gpu_access_world import container, namespace, node, pod

OPERATOR = "nvcr.io/nvidia/gpu-operator:v24.9.2"
PLUGIN = "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"
TENANTS = (TenantInfo("alpha", "Alpha", trust_class("internal"), ("team-alpha",)),)


def operator_pod(
    ns: str, image: str = OPERATOR, name: str = "gpu-operator", *, template_hash: bool = True
) -> dict[str, Any]:
    """The operator's pod as its Deployment's ReplicaSet makes it (`template_hash` False: as an
    export that lost its pod-template-hash label shows it)."""
    made = pod(ns, f"{name}-7c9f5d8b6-x2k4p", container(image=image), node_name="cpu-1")
    made["metadata"]["labels"] = {"app": name}
    if template_hash:
        made["metadata"]["labels"]["pod-template-hash"] = "7c9f5d8b6"
    made["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": f"{name}-7c9f5d8b6"}
    ]
    return made


def plugin_pod(ns: str) -> dict[str, Any]:
    made = pod(ns, "nvidia-device-plugin-daemonset-q8w2n", container(image=PLUGIN))
    made["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "nvidia-device-plugin-daemonset"}
    ]
    return made


def nodes_and_pods(*extra: dict[str, Any], operator: dict | None = None) -> list[dict[str, Any]]:
    return [
        node("gpu-a"),
        namespace("gpu-operator"),
        namespace("team-alpha"),
        operator or operator_pod("gpu-operator"),
        plugin_pod("gpu-operator"),
        *extra,
    ]


def inputs(objects: list[dict[str, Any]]) -> PostureInputs:
    return PostureInputs(cluster="test", snapshot=normalise(objects), tenants=TENANTS)


def unpinned_unclassified(objects: list[dict[str, Any]]) -> list[str]:
    found = CHECKS["POD-007"].evaluate(inputs(objects))
    return sorted(f"{d.subject_kind}:{d.subject_name}" for d in found if not d.tenants)


def test_the_operator_pod_places_its_namespace_without_its_deployment():
    objects = nodes_and_pods()
    assert "gpu-operator" in inputs(objects).platform_namespaces
    # Its DaemonSets' pods are the platform's, not five unpinned images of nobody's.
    assert unpinned_unclassified(objects) == []


def test_a_name_alone_or_a_claimed_namespace_places_nothing():
    other_image = [node("gpu-a"), operator_pod("gpu-operator", image="busybox:1.36")]
    assert "gpu-operator" not in inputs(other_image).platform_namespaces
    claimed = [node("gpu-a"), namespace("team-alpha"), operator_pod("team-alpha")]
    assert "team-alpha" not in inputs(claimed).platform_namespaces


def test_where_rbac_was_read_the_pod_needs_its_binding_or_its_operands():
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "someone-else"},
        "roleRef": {"kind": "ClusterRole", "name": "view", "apiGroup": ""},
        "subjects": [{"kind": "ServiceAccount", "name": "x", "namespace": "kube-system"}],
    }
    alone = [node("gpu-a"), namespace("ops"), operator_pod("ops"), binding]
    assert "ops" not in inputs(alone).platform_namespaces
    assert "ops" in inputs([*alone, plugin_pod("ops")]).platform_namespaces


@pytest.mark.django_db
def test_a_synced_snapshot_of_nodes_and_pods_shows_the_operator_namespace_as_platform(tmp_path):
    path = tmp_path / "nodes-pods.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": nodes_and_pods()}))
    cluster = cluster_get_or_create(name="pods-only")
    cluster_sync_from_snapshot(cluster=cluster, paths=[path])
    assert "gpu-operator" in cluster_platform_namespaces(cluster)


# --- an export whose operator pod lost its pod-template-hash label (rtedge edge-west) ----------

UNHASHED = operator_pod("gpu-operator", template_hash=False)


def test_the_operator_pod_without_its_template_hash_label_still_places_its_namespace():
    objects = nodes_and_pods(operator=UNHASHED)
    found = inputs(objects)
    assert "gpu-operator" in found.platform_namespaces
    assert not [w for w in found.snapshot.warnings if "holds more than" in w]
    assert unpinned_unclassified(objects) == []


@pytest.mark.parametrize(
    "planted",
    [
        # A pod of a ReplicaSet named like the operator's, running something else.
        [operator_pod("gpu-operator", image="busybox:1.36", name="gpu-operator-x")],
        # A bare pod beside the operator's.
        [pod("gpu-operator", "debug", container(image="busybox:1.36"))],
    ],
    ids=["look-alike-replicaset", "bare-pod"],
)
def test_anything_beside_an_unhashed_operator_pod_still_unmakes_its_namespace(planted):
    planted[0]["metadata"]["labels"].pop("pod-template-hash", None)
    found = inputs(nodes_and_pods(*planted, operator=UNHASHED))
    assert "gpu-operator" not in found.platform_namespaces
    assert [w for w in found.snapshot.warnings if "holds more than" in w]
