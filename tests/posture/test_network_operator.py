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


# The Network Operator's operands as its chart and NicClusterPolicy run them (Mellanox's
# network-operator values.yaml and NicClusterPolicy spec), each the repository's real name.
CNI_PLUGINS = "nvcr.io/nvidia/mellanox/plugins:network-operator-v24.10.0"
TELEMETRY = "nvcr.io/nvidia/doca/doca_telemetry:1.16.5-doca2.6.0-host"
NIC_CONFIG = "ghcr.io/mellanox/nic-configuration-operator:v0.1.14"
NIC_CONFIG_DAEMON = "ghcr.io/mellanox/nic-configuration-operator-daemon:v0.1.14"
SRIOV_OPERATOR = "nvcr.io/nvidia/mellanox/sriov-network-operator:network-operator-v24.10.0"
SRIOV_DAEMON = (
    "nvcr.io/nvidia/mellanox/sriov-network-operator-config-daemon:network-operator-v24.10.0"
)


def _deployment(ns: str, name: str, image: str) -> dict[str, Any]:
    deployment = _operator(ns, image)
    deployment["metadata"]["name"] = name
    return deployment


def _unbound_world(*objects: dict[str, Any]) -> PostureInputs:
    """A snapshot that read no RBAC (`kubectl get` without the RBAC kinds, the common export):
    only images place the namespace, and only if it holds nothing else."""
    return world([node("gpu-a"), namespace("alpha"), namespace(NS), *objects], (ALPHA,))


def _full_stack() -> list[dict[str, Any]]:
    daemonsets = [
        _daemonset(NS, "mofed-ubuntu22.04-ds", MOFED),
        _daemonset(NS, "cni-plugins-ds", CNI_PLUGINS),
        _daemonset(NS, "doca-telemetry-service", TELEMETRY),
        _daemonset(NS, "nic-configuration-daemon", NIC_CONFIG_DAEMON),
        _daemonset(NS, "sriov-network-config-daemon", SRIOV_DAEMON),
    ]
    deployments = [
        _operator(NS),
        _deployment(NS, "nic-configuration-operator", NIC_CONFIG),
        _deployment(NS, "sriov-network-operator", SRIOV_OPERATOR),
    ]
    return [*deployments, *daemonsets, *(_pod_of(ds) for ds in daemonsets)]


def test_without_rbac_every_operand_of_the_chart_keeps_the_namespace_the_platforms():
    """CNI plugins, DOCA Telemetry, the NIC Configuration Operator and the SR-IOV Network
    Operator subchart are the stack's: none of them turns its namespace into a tenant's, whose
    DOCA driver would raise POD-001 critical affecting every tenant on the node."""
    inputs = _unbound_world(*_full_stack())
    assert NS in inputs.platform_namespaces
    assert _pod_findings(inputs) == set()


def test_without_rbac_anything_else_beside_the_stack_keeps_the_namespace_judged():
    """The guard stays: a tenant's pod beside the stack, or someone's `plugins` image that is
    not Mellanox's, leaves the namespace unclassified and judged."""
    stranger = _daemonset(NS, "cni-plugins-ds", "docker.io/someone/plugins:1.0")
    inputs = _unbound_world(_operator(NS), stranger, _pod_of(stranger))
    assert NS not in inputs.platform_namespaces
    shell = _daemonset(NS, "debug", "docker.io/library/ubuntu:22.04")
    inputs = _unbound_world(*_full_stack(), shell, _pod_of(shell))
    assert NS not in inputs.platform_namespaces
    assert "POD-001" in _pod_findings(inputs)
