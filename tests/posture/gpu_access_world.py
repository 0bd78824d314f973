"""Clusters as `kubectl get -A -o json` prints them, for every way a GPU reaches a pod: our own
fixtures, spelled as the NVIDIA device plugin, the GPU Operator, KAI Scheduler and HAMi write
their objects (labels, annotations, env). normalise() reads them as a sync would."""

from __future__ import annotations

from typing import Any

from inventory.sources.normalise import normalise
from posture.inputs import PostureInputs, TenantInfo
from posture.rules import CHECKS, FindingDraft
from posture.rules.registry import merge_drafts

OPERATOR_NS = "gpu-operator"
KAI_RESERVATION_NS = "kai-resource-reservation"
UUIDS = [f"GPU-{i}a1b2c3d-1111-2222-3333-44445555666{i}" for i in range(8)]


def node(
    name: str,
    *,
    gpus: int = 8,
    capacity: dict[str, Any] | None = None,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A GPU node as GPU Feature Discovery labels it."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "nvidia.com/gpu.present": "true",
                "nvidia.com/gpu.count": str(gpus),
                "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
                **(labels or {}),
            },
        },
        "spec": {},
        "status": {
            "capacity": {"cpu": "96", "memory": "1056Gi", **(capacity or {})},
            "allocatable": {"cpu": "95", **(capacity or {})},
        },
    }


def namespace(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def configmap(ns: str, name: str, data: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns},
        "data": data,
    }


def cluster_policy(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "nvidia.com/v1",
        "kind": "ClusterPolicy",
        "metadata": {"name": "cluster-policy"},
        "spec": {"operator": {"defaultRuntime": "containerd"}, **spec},
    }


def container(
    name: str = "main",
    image: str = "nvcr.io/nvidia/pytorch:24.05-py3",
    gpu: dict[str, Any] | None = None,
    **fields: Any,
) -> dict[str, Any]:
    resources = {"limits": dict(gpu), "requests": dict(gpu)} if gpu else {}
    return {"name": name, "image": image, "resources": resources, **fields}


def pod(
    ns: str,
    name: str,
    *containers: dict[str, Any],
    node_name: str | None = "gpu-a",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": ns,
            "labels": labels or {},
            "annotations": annotations or {},
        },
        "spec": {"nodeName": node_name, "containers": list(containers) or [container()], **spec},
        "status": {"phase": "Running"},
    }


def kai_fraction_pod(
    ns: str, name: str, group: str | None, *, fraction: str = "0.5", node_name: str = "gpu-a"
) -> dict[str, Any]:
    """A pod KAI Scheduler bound to a share of one GPU: the fraction annotation, the GPU group
    label the binder sets, NVIDIA_VISIBLE_DEVICES from the ConfigMap the binder fills."""
    prefix = f"{name}-x7k2q9p-shared-gpu"
    main = container(
        env=[
            {
                "name": "NVIDIA_VISIBLE_DEVICES",
                "valueFrom": {
                    "configMapKeyRef": {"name": f"{prefix}-0", "key": "RUNAI-VISIBLE-DEVICES"}
                },
            },
            {
                "name": "RUNAI_NUM_OF_GPUS",
                "valueFrom": {
                    "configMapKeyRef": {"name": f"{prefix}-0", "key": "RUNAI_NUM_OF_GPUS"}
                },
            },
        ],
        envFrom=[{"configMapRef": {"name": f"{prefix}-0-evar", "optional": False}}],
    )
    labels = {"kai.scheduler/queue": "team-queue", **({"runai-gpu-group": group} if group else {})}
    annotations = {
        "gpu-fraction": fraction,
        "runai/shared-gpu-configmap": prefix,
        "pod-group-name": f"pg-{name}",
    }
    return pod(
        ns,
        name,
        main,
        node_name=node_name,
        labels=labels,
        annotations=annotations,
        schedulerName="kai-scheduler",
    )


def kai_reservation_pod(group: str, gpu_uuid: str, node_name: str = "gpu-a") -> dict[str, Any]:
    """The pod KAI's binder creates to hold the real GPU its fractions share."""
    reserve = container(
        "resource-reservation",
        "ghcr.io/nvidia/kai-scheduler/resource-reservation:v0.9.3",
        gpu={"nvidia.com/gpu": "1"},
    )
    return pod(
        KAI_RESERVATION_NS,
        f"gpu-reservation-{node_name}-{group[-5:]}",
        reserve,
        node_name=node_name,
        labels={"app": "kai-resource-reservation", "runai-gpu-group": group},
        annotations={
            "run.ai/reserve_for_gpu_index": gpu_uuid,
            "karpenter.sh/do-not-disrupt": "true",
        },
        serviceAccountName="kai-resource-reservation",
    )


def hami_pod(ns: str, name: str, gpu_uuid: str | None, **gpu: str) -> dict[str, Any]:
    """A pod HAMi scheduled: its vGPU request and the device HAMi allocated."""
    annotations = (
        {
            "hami.io/vgpu-devices-allocated": f"{gpu_uuid},NVIDIA,3000,30:;",
            "hami.io/vgpu-node": "gpu-a",
            "hami.io/bind-phase": "success",
        }
        if gpu_uuid
        else {}
    )
    resources = {"nvidia.com/gpu": "1", **gpu}
    return pod(
        ns, name, container(gpu=resources), annotations=annotations, schedulerName="hami-scheduler"
    )


def world(objects: list[dict[str, Any]], tenants: tuple[TenantInfo, ...]) -> PostureInputs:
    snapshot = normalise(objects, configured_platform=(OPERATOR_NS,))
    return PostureInputs(cluster="test", snapshot=snapshot, tenants=tenants)


def run(check_id: str, inputs: PostureInputs) -> list[FindingDraft]:
    return merge_drafts(CHECKS[check_id].evaluate(inputs))
