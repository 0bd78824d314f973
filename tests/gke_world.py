"""A small GKE Standard cluster of our own making, without the GPU Operator: GKE's device plugin
in kube-system, GKE's managed DCGM (nv-hostengine and the exporter) in gke-managed-system, an
H100 pool, a pool of A100 MIG partitions time-shared by GKE and a plain A100 MIG pool.

`exporter` is the managed exporter's image: the digest-only reference a snapshot may hold, or a
tagged one (GKE tags its builds `<DCGM>-<exporter>-gke.<n>`)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import yaml
from django.core.management import call_command

GKE = "cloud.google.com/"
GKE_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
PLUGIN = "gke.gcr.io/nvidia-gpu-device-plugin@sha256:" + "7" * 64
HOSTENGINE = "gke.gcr.io/nvidia-dcgm@sha256:" + "d" * 64
EXPORTER_TAGGED = "gke.gcr.io/gke-dcgm-exporter:4.4.1-4.6.0-gke.17"
EXPORTER_DIGEST = "gke.gcr.io/gke-dcgm-exporter@sha256:" + "e" * 64
KUBELET = "v1.31.6-gke.1020000"
H100, MIGTS, MIG = "gke-lab-h100-1a2b", "gke-lab-migts-3c4d", "gke-lab-mig-5e6f"
MANAGED = "gke-managed-system"
INSTANCE = "node.kubernetes.io/instance-type"
TENANTS = {
    "tenants": [
        {"slug": "vision", "name": "Vision", "trust_class": "sensitive", "namespaces": ["vision"]},
        {
            "slug": "search",
            "name": "Search",
            "trust_class": "internal_trusted",
            "namespaces": ["search"],
        },
        {"slug": "ads", "name": "Ads", "trust_class": "internal_trusted", "namespaces": ["ads"]},
    ]
}


def meta(name: str, namespace: str | None = None, **extra: Any) -> dict[str, Any]:
    found = {"name": name, "uid": f"uid-{namespace}-{name}", **extra}
    found["creationTimestamp"] = "2026-11-30T09:00:00Z"
    return {**found, "namespace": namespace} if namespace else found


def gke_node(name: str, pool: str, capacity: int, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": meta(
            name,
            labels={
                GKE + "gke-nodepool": pool,
                GKE + "gke-gpu-driver-version": "default",
                **labels,
            },
        ),
        "spec": {"taints": [GKE_TAINT]},
        "status": {
            "capacity": {"cpu": "8", "nvidia.com/gpu": str(capacity)},
            "allocatable": {"cpu": "8", "nvidia.com/gpu": str(capacity)},
            "nodeInfo": {
                "osImage": "Container-Optimized OS from Google",
                "kubeletVersion": KUBELET,
            },
        },
    }


def container(name: str, image: str, gpus: int = 0, **extra: Any) -> dict[str, Any]:
    found = {"name": name, "image": image, **extra}
    if gpus:
        found["resources"] = {"limits": {"nvidia.com/gpu": str(gpus)}}
    return found


def daemonset(
    namespace: str, name: str, labels: dict, containers: list[dict], volumes: list | None = None
) -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": meta(name, namespace, labels=labels),
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "priorityClassName": "system-node-critical",
                    "tolerations": [{"operator": "Exists"}],
                    "containers": containers,
                    "volumes": volumes or [],
                },
            },
        },
    }


def pod(
    namespace: str,
    name: str,
    node_name: str,
    containers: list[dict],
    owner: str = "",
    labels: dict | None = None,
    volumes: list | None = None,
) -> dict:
    extra: dict[str, Any] = {"labels": labels or {}}
    if owner:
        extra["ownerReferences"] = [{"kind": "DaemonSet", "name": owner}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta(name, namespace, **extra),
        "spec": {
            "nodeName": node_name,
            "serviceAccountName": "default",
            "containers": containers,
            "volumes": volumes or [],
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
        },
        "status": {"phase": "Running"},
    }


DEV = [{"name": "dev", "hostPath": {"path": "/dev"}}]


def managed_dcgm(exporter: str, nodes: tuple[str, ...]) -> list[dict]:
    """GKE's managed DCGM: a privileged nv-hostengine and the exporter that reads it."""
    engine = container(
        "nvidia-dcgm",
        HOSTENGINE,
        command=["/usr/bin/nv-hostengine", "-n", "-b", "ALL"],
        securityContext={"privileged": True},
        volumeMounts=[{"name": "dev", "mountPath": "/dev"}],
    )
    exporter_container = container("dcgm-exporter", exporter, ports=[{"containerPort": 9400}])
    engine_labels = {"app.kubernetes.io/name": "nvidia-dcgm"}
    exporter_labels = {"app.kubernetes.io/name": "gke-managed-dcgm-exporter"}
    items = [
        daemonset(MANAGED, "nvidia-dcgm", engine_labels, [engine], DEV),
        daemonset(MANAGED, "dcgm-exporter", exporter_labels, [exporter_container]),
    ]
    for n in nodes:
        items.append(
            pod(MANAGED, f"nvidia-dcgm-{n[-4:]}", n, [engine], "nvidia-dcgm", engine_labels, DEV)
        )
        items.append(
            pod(
                MANAGED,
                f"dcgm-exporter-{n[-4:]}",
                n,
                [exporter_container],
                "dcgm-exporter",
                exporter_labels,
            )
        )
    return items


def snapshot(exporter: str = EXPORTER_TAGGED, extra: list[dict] | None = None) -> dict[str, Any]:
    nodes = (H100, MIGTS, MIG)
    plugin = container("nvidia-gpu-device-plugin", PLUGIN)
    app = "registry.example.internal/{}/app@sha256:" + "c" * 64
    items = [
        gke_node(
            H100,
            "a3-highgpu-8g",
            8,
            **{GKE + "gke-accelerator": "nvidia-h100-80gb", INSTANCE: "a3-highgpu-8g"},
        ),
        # 7 x 1g.10gb partitions of one A100 80GB, each time-shared by 2 clients: capacity 14.
        gke_node(
            MIGTS,
            "a2-migts",
            14,
            **{
                GKE + "gke-accelerator": "nvidia-a100-80gb",
                INSTANCE: "a2-ultragpu-1g",
                GKE + "gke-gpu-partition-size": "1g.10gb",
                GKE + "gke-gpu-sharing-strategy": "time-sharing",
                GKE + "gke-max-shared-clients-per-gpu": "2",
            },
        ),
        # A plain MIG pool: 7 x 1g.10gb partitions of one A100 80GB, not time-shared.
        gke_node(
            MIG,
            "a2-mig",
            7,
            **{
                GKE + "gke-accelerator": "nvidia-a100-80gb",
                INSTANCE: "a2-ultragpu-1g",
                GKE + "gke-gpu-partition-size": "1g.10gb",
            },
        ),
        *(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": meta(ns)}
            for ns in ("kube-system", MANAGED, "vision", "search", "ads")
        ),
        daemonset("kube-system", "nvidia-gpu-device-plugin", {"k8s-app": "nvidia-gpu"}, [plugin]),
        *(
            pod(
                "kube-system",
                f"nvidia-gpu-device-plugin-{n[-4:]}",
                n,
                [plugin],
                "nvidia-gpu-device-plugin",
            )
            for n in nodes
        ),
        *managed_dcgm(exporter, nodes),
        pod("vision", "train-0", H100, [container("main", app.format("vision"), gpus=8)]),
        pod("search", "embed-0", MIGTS, [container("main", app.format("search"), gpus=1)]),
        pod("ads", "rank-0", MIGTS, [container("main", app.format("ads"), gpus=1)]),
        pod("search", "eval-0", MIG, [container("main", app.format("search"), gpus=1)]),
        *(extra or []),
    ]
    return {"apiVersion": "v1", "kind": "List", "items": items, "metadata": {}}


def run(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def sync_and_score(tmp_path: Path, world: dict[str, Any], cluster: str = "gke-lab") -> list[dict]:
    """Sync the world through `sync_cluster --snapshot`, score it, and return its open findings."""
    (tmp_path / "tenants.yaml").write_text(yaml.safe_dump(TENANTS))
    (tmp_path / "world.json").write_text(json.dumps(world))
    run("apply_tenants", str(tmp_path / "tenants.yaml"))
    assert "succeeded" in run(
        "sync_cluster", "--cluster", cluster, "--snapshot", str(tmp_path / "world.json")
    )
    run("score", "--cluster", cluster)
    return json.loads(
        run("export_findings", "--format", "json", "--cluster", cluster, "--status", "open")
    )


def by_check(findings: list[dict], check: str) -> list[dict]:
    return [f for f in findings if f["check"] == check]
