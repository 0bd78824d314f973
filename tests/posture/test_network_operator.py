"""The NVIDIA Network Operator's namespace as found is the GPU nodes' host stack, as the GPU
Operator's is (DESIGN §3): found by its operator Deployment's image with its RBAC or its operand
DaemonSets beside it, never by the namespace's name (fail closed). Objects as `kubectl get -o
json` prints them (our own, spelled as the operator's chart and NicClusterPolicy create them)."""

from __future__ import annotations

from typing import Any

from posture.inputs import PostureInputs
from tests.posture.builders import tenant
from tests.posture.gpu_access_world import container, namespace, node, run, world

ALPHA = tenant("alpha", "internal")
NS = "nvidia-network-operator"
# Some ClusterRoleBinding was read (the GPU Operator's), none for the Network Operator: its
# operands must place it, as in a snapshot whose RBAC was read but not this chart's binding.
GPU_OPERATOR_BINDING = {
    "apiVersion": "rbac.authorization.k8s.io/v1",
    "kind": "ClusterRoleBinding",
    "metadata": {"name": "gpu-operator"},
    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "x"},
    "subjects": [{"kind": "ServiceAccount", "name": "gpu-operator", "namespace": "gpu-operator"}],
}


def _operator(ns: str, image: str = "nvcr.io/nvidia/cloud-native/network-operator:v24.10.0"):
    template = {
        "metadata": {"labels": {"app.kubernetes.io/name": "network-operator"}},
        "spec": {"containers": [container("network-operator", image)]},
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "network-operator", "namespace": ns},
        "spec": {"replicas": 1, "template": template},
    }


def _daemonset(ns: str, name: str, image: str) -> dict[str, Any]:
    """A privileged, host-network DaemonSet with /dev mounted, as the MOFED driver and the RDMA
    shared device plugin are."""
    main = container(
        name,
        image,
        securityContext={"privileged": True},
        volumeMounts=[{"name": "devs", "mountPath": "/dev/"}],
    )
    spec = {
        "hostNetwork": True,
        "containers": [main],
        "volumes": [{"name": "devs", "hostPath": {"path": "/dev/"}}],
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": ns, "uid": f"ds-{ns}-{name}"},
        "spec": {"template": {"metadata": {"labels": {"app": name}}, "spec": spec}},
    }


def _pod_of(ds: dict[str, Any]) -> dict[str, Any]:
    meta = ds["metadata"]
    owner = {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": meta["name"], "uid": meta["uid"]}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{meta['name']}-x1",
            "namespace": meta["namespace"],
            "ownerReferences": [owner],
        },
        "spec": {"nodeName": "gpu-a", **ds["spec"]["template"]["spec"]},
        "status": {"phase": "Running"},
    }


MOFED = "nvcr.io/nvidia/mellanox/doca-driver:24.10-0.7.0.0-0-ubuntu22.04-amd64"
RDMA_DP = "ghcr.io/mellanox/k8s-rdma-shared-dev-plugin:v1.5.2"


def _world(*objects: dict[str, Any]) -> PostureInputs:
    base = [node("gpu-a"), namespace("alpha"), namespace(NS), GPU_OPERATOR_BINDING]
    return world([*base, *objects], (ALPHA,))


def _pod_findings(inputs: PostureInputs) -> set[str]:
    checks = ("POD-001", "POD-002", "POD-003", "POD-005")
    return {c for c in checks if any(d.subject_namespace == NS for d in run(c, inputs))}


def test_the_network_operators_namespace_is_the_platforms_by_its_operands():
    mofed = _daemonset(NS, "mofed-ubuntu22.04-ds", MOFED)
    rdma = _daemonset(NS, "rdma-shared-dp-ds", RDMA_DP)
    inputs = _world(_operator(NS), mofed, rdma, _pod_of(mofed), _pod_of(rdma))
    assert NS in inputs.platform_namespaces
    assert _pod_findings(inputs) == set()  # stack pods, not a tenant's: no POD-001 critical


def test_the_mellanox_image_of_the_operator_is_recognised_too():
    mofed = _daemonset(NS, "mofed-ds", "nvcr.io/nvidia/mellanox/mofed:5.9-0.5.6.0")
    inputs = _world(_operator(NS, "mellanox/network-operator:v23.7.0"), mofed)
    assert NS in inputs.platform_namespaces


def test_the_name_alone_or_the_operator_image_alone_places_nothing():
    """Fail closed: a namespace called like the operator's, holding privileged DaemonSets but
    no operator, stays unclassified and judged; so does the operator's image run alone (anyone
    may run it) where RBAC was read and binds it nowhere."""
    mofed = _daemonset(NS, "mofed-ubuntu22.04-ds", MOFED)
    inputs = _world(mofed, _pod_of(mofed), namespace("scratch"), _operator("scratch"))
    assert NS not in inputs.platform_namespaces
    assert "scratch" not in inputs.platform_namespaces
    assert _pod_findings(inputs) >= {"POD-001", "POD-003"}
