"""The GPU Operator's namespace found from its pods where the snapshot holds no Deployment or
DaemonSet (`kubectl get nodes,pods,namespaces`): its own pod is the same evidence as its
Deployment, held to the same safeguards (never a name alone, never a claimed namespace), and
its image tag gives the Operator's version as its Deployment's would (rtedge k47, k48: an
export whose operator pod had no pod-template-hash label made the namespace "more than the GPU
stack", its operands unclassified, and the Operator's version unknown)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from inventory.node_components import deployed_unknown, node_components
from inventory.platform import cluster_platform_namespaces
from inventory.services import cluster_sync_from_snapshot
from inventory.sources.normalise import normalise
from inventory.sync import cluster_get_or_create
from posture.inputs import PostureInputs, TenantInfo
from posture.rules import CHECKS
from posture.services import posture_evaluate
from tests.conftest import api_client
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


def gpu_node(objects: list[dict[str, Any]], **kwargs: Any):
    (found,) = [n for n in normalise(objects, **kwargs).nodes if n.name == "gpu-a"]
    return found


@pytest.mark.parametrize("operator", [operator_pod("gpu-operator"), UNHASHED], ids=["hash", "none"])
def test_without_its_deployment_the_operator_pods_image_tag_is_its_version(operator):
    found = gpu_node(nodes_and_pods(operator=operator))
    assert found.gpu_operator_version == "24.9.2"
    component = node_components(found)["gpu_operator"]
    assert component["state"] == "installed"
    assert component["source"].startswith("pod gpu-operator/gpu-operator-7c9f5d8b6-x2k4p")
    assert "no Deployment" in component["source"]
    assert "gpu_operator" not in deployed_unknown(found)


def test_a_digest_pinned_operator_pod_leaves_the_version_unknown():
    pinned = operator_pod("gpu-operator", image="nvcr.io/nvidia/gpu-operator@sha256:" + "a" * 64)
    found = gpu_node(nodes_and_pods(operator=pinned))
    assert found.gpu_operator_version is None
    assert "gpu_operator" in deployed_unknown(found)


def test_a_read_deployment_decides_and_a_tenants_pod_gives_no_version():
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "gpu-operator", "namespace": "gpu-operator"},
        "spec": {
            "selector": {"matchLabels": {"app": "gpu-operator"}},
            "template": {
                "metadata": {"labels": {"app": "gpu-operator"}},
                "spec": {
                    "containers": [
                        container(image=OPERATOR.replace(":v24.9.2", "@sha256:" + "b" * 64))
                    ]
                },
            },
        },
    }
    assert gpu_node(nodes_and_pods(deployment)).gpu_operator_version is None
    tenants = [node("gpu-a"), namespace("team-alpha"), operator_pod("team-alpha")]
    claimed = gpu_node(tenants, tenant_namespaces=("team-alpha",))
    assert claimed.gpu_operator_version is None


@pytest.mark.django_db
def test_the_api_shows_the_pods_version_and_stack004_no_longer_asks_for_it(tmp_path, personas):
    path = tmp_path / "nodes-pods.json"
    items = nodes_and_pods(operator=UNHASHED)
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    cluster = cluster_get_or_create(name="pods-only")
    cluster_sync_from_snapshot(cluster=cluster, paths=[path])
    posture_evaluate()
    client = api_client(personas["auditor"])
    (row,) = client.get("/api/v1/nodes/", {"cluster": "pods-only"}).json()["results"]
    assert row["gpu_operator_version"] == "24.9.2"
    source = row["components"]["gpu_operator"]["source"]
    assert source.startswith("pod gpu-operator/gpu-operator-7c9f5d8b6-x2k4p (its image tag")
    found = client.get("/api/v1/findings/", {"cluster": "pods-only", "check": "STACK-004"})
    unknown = [f["evidence"].get("unknown") for f in found.json()["results"]]
    assert not [u for u in unknown if u and "gpu_operator_version" in u]
    pod007 = client.get("/api/v1/findings/", {"cluster": "pods-only", "check": "POD-007"})
    assert [f["subject_namespace"] for f in pod007.json()["results"]] == []
