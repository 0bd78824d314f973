"""A small OpenShift 4 cluster of our own making: RHCOS nodes (labelled
`node.openshift.io/os_id` by OpenShift), the cluster's own privileged node agents in its
`openshift-*` namespaces (machine-config-daemon, ovnkube-node, multus, node-exporter, tuned, the
NFD worker), the GPU Operator installed by OLM in `nvidia-gpu-operator`, its default
SecurityContextConstraints, and a tenant's GPU pod."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from tests.gke_world import container, daemonset, meta, pod, run
from tests.posture.openshift_world import default_openshift

OS_ID = "node.openshift.io/os_id"
WORKER = "ocp-gpu-worker-0"
OPERATOR_NS = "nvidia-gpu-operator"
MONITORING = "openshift-monitoring"
OPERATOR_IMAGE = "nvcr.io/nvidia/gpu-operator:v24.9.2"
PLUGIN_IMAGE = "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"
TENANTS = {
    "tenants": [
        {"slug": "vision", "name": "Vision", "trust_class": "internal", "namespaces": ["vision"]},
    ]
}
HOST_ROOT = [{"name": "rootfs", "hostPath": {"path": "/"}}]
PRIVILEGED = {"privileged": True}
# OpenShift's own node agents: (namespace, DaemonSet, image), each privileged on every node.
AGENTS = (
    ("openshift-machine-config-operator", "machine-config-daemon", "machine-config-operator"),
    ("openshift-ovn-kubernetes", "ovnkube-node", "ovn-kubernetes"),
    ("openshift-multus", "multus", "multus-cni"),
    (MONITORING, "node-exporter", "node-exporter"),
    ("openshift-cluster-node-tuning-operator", "tuned", "cluster-node-tuning-operator"),
    ("openshift-nfd", "nfd-worker", "node-feature-discovery"),
)


def ocp_node(name: str, openshift: bool = True) -> dict[str, Any]:
    labels = {"node-role.kubernetes.io/worker": "", "kubernetes.io/os": "linux"}
    if openshift:
        labels[OS_ID] = "rhcos"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": meta(name, labels=labels),
        "status": {
            "capacity": {"cpu": "32", "nvidia.com/gpu": "4"},
            "allocatable": {"cpu": "32", "nvidia.com/gpu": "4"},
            "nodeInfo": {
                "osImage": "Red Hat Enterprise Linux CoreOS 417.94",
                "kubeletVersion": "v1.30.7",
            },
        },
    }


def namespace(name: str, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta(name, **extra)}


def openshift_namespace(name: str) -> dict[str, Any]:
    """As OpenShift's operators make them: run-level, management workloads, monitoring."""
    return namespace(
        name,
        labels={"openshift.io/run-level": "0", "openshift.io/cluster-monitoring": "true"},
        annotations={
            "workload.openshift.io/allowed": "management",
            "openshift.io/sa.scc.uid-range": "1000000000/10000",
        },
    )


def agent(ns: str, name: str, image: str) -> list[dict[str, Any]]:
    """A privileged, host-mounting DaemonSet and its pod on the worker."""
    c = container(
        name,
        f"quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:{image[:1] * 64}",
        securityContext=PRIVILEGED,
        volumeMounts=[{"name": "rootfs", "mountPath": "/rootfs"}],
    )
    labels = {"app": name}
    return [
        daemonset(ns, name, labels, [c], HOST_ROOT),
        pod(ns, f"{name}-x1", WORKER, [c], name, labels, HOST_ROOT),
    ]


def gpu_operator() -> list[dict[str, Any]]:
    """The GPU Operator as OLM installs it: its Deployment, the ClusterRoleBinding of its
    account, and its device plugin DaemonSet with a pod on the worker."""
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta("gpu-operator", OPERATOR_NS),
        "spec": {
            "selector": {"matchLabels": {"app": "gpu-operator"}},
            "template": {
                "metadata": {"labels": {"app": "gpu-operator"}},
                "spec": {
                    "serviceAccountName": "gpu-operator",
                    "containers": [container("gpu-operator", OPERATOR_IMAGE)],
                },
            },
        },
    }
    crb = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "gpu-operator"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "x"},
        "subjects": [{"kind": "ServiceAccount", "name": "gpu-operator", "namespace": OPERATOR_NS}],
    }
    plugin = container("nvidia-device-plugin", PLUGIN_IMAGE, securityContext=PRIVILEGED)
    labels = {"app": "nvidia-device-plugin-daemonset"}
    return [
        deployment,
        crb,
        daemonset(OPERATOR_NS, "nvidia-device-plugin-daemonset", labels, [plugin]),
        pod(OPERATOR_NS, "nvidia-device-plugin-x1", WORKER, [plugin], labels["app"], labels),
    ]


def monitoring_rbac(namespace: str) -> list[dict[str, Any]]:
    """The Role and RoleBinding OpenShift's monitoring stack has in each namespace it scrapes
    (`prometheus-k8s`): every OpenShift cluster holds namespaced RBAC, so an export of one
    without any left Roles and RoleBindings out of `kubectl get`."""
    rbac = "rbac.authorization.k8s.io"
    role = {
        "apiVersion": f"{rbac}/v1",
        "kind": "Role",
        "metadata": meta("prometheus-k8s", namespace),
        "rules": [
            {
                "apiGroups": [""],
                "resources": ["services", "endpoints", "pods"],
                "verbs": ["get", "list", "watch"],
            }
        ],
    }
    account = {"kind": "ServiceAccount", "name": "prometheus-k8s", "namespace": MONITORING}
    bound = {
        "apiVersion": f"{rbac}/v1",
        "kind": "RoleBinding",
        "metadata": meta("prometheus-k8s", namespace),
        "roleRef": {"apiGroup": rbac, "kind": "Role", "name": "prometheus-k8s"},
        "subjects": [account],
    }
    return [role, bound]


def snapshot(openshift: bool = True, extra: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The cluster; `openshift=False`: the same objects on nodes without OpenShift's label."""
    app = container("main", "registry.example.internal/vision/app@sha256:" + "c" * 64, gpus=1)
    items = [
        ocp_node(WORKER, openshift),
        *(namespace(ns) for ns in ("kube-system", OPERATOR_NS, "vision")),
        *(openshift_namespace(ns) for ns, _, _ in AGENTS),
        *(item for spec in AGENTS for item in agent(*spec)),
        *gpu_operator(),
        *(o for o in default_openshift() if o["kind"] != "Namespace"),
        openshift_namespace("openshift-apiserver"),
        *monitoring_rbac(MONITORING),
        pod("vision", "train-0", WORKER, [app]),
        *(extra or []),
    ]
    return {"apiVersion": "v1", "kind": "List", "items": items, "metadata": {}}


def sync_and_score(tmp_path: Path, world: dict[str, Any], tenants: dict | None = None) -> list:
    """Sync the world through `sync_cluster --snapshot`, score it, return its open findings."""
    (tmp_path / "tenants.yaml").write_text(yaml.safe_dump(tenants or TENANTS))
    (tmp_path / "world.json").write_text(json.dumps(world))
    run("apply_tenants", str(tmp_path / "tenants.yaml"))
    assert "succeeded" in run(
        "sync_cluster", "--cluster", "ocp-lab", "--snapshot", str(tmp_path / "world.json")
    )
    run("score", "--cluster", "ocp-lab")
    return json.loads(
        run("export_findings", "--format", "json", "--cluster", "ocp-lab", "--status", "open")
    )
