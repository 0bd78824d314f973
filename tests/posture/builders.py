"""Terse builders for the checks' read model: nodes, pods, tenants and PostureInputs."""

from __future__ import annotations

from typing import Any

from inventory.snapshot import (
    ClusterSnapshot,
    Container,
    EnvVar,
    Namespace,
    Node,
    Pod,
    Taint,
    Volume,
    VolumeMount,
)
from posture.inputs import PostureInputs, TenantInfo, TrustClassInfo, seed_trust_class
from posture.rules import CHECKS, FindingDraft
from posture.rules.registry import merge_drafts

CLASS_TAINT = Taint("gpuposture.io/trust-class", "internal", "NoSchedule")
FULL_STACK = {
    "driver_version": "550.90.07",
    "container_toolkit_version": "1.16.1",
    "device_plugin_version": "0.17.0",
    "firmware_version": "96.00.89.00.01",
}


def trust_class(slug: str) -> TrustClassInfo:
    return seed_trust_class(slug)


def tenant(slug: str, cls: str = "internal", namespaces: tuple[str, ...] = ()) -> TenantInfo:
    """A tenant owning `namespaces` (default: the namespace named like its slug)."""
    return TenantInfo(slug, slug.title(), trust_class(cls), namespaces or (slug,))


def gpu_node(name: str = "gpu-1", **fields: Any) -> Node:
    """A fully inventoried, class-tainted node with 4 exclusive GPUs unless told otherwise."""
    defaults: dict[str, Any] = {
        "gpu_count": 4,
        "gpu_model": "NVIDIA-A100-SXM4-80GB",
        "gpu_capacity": {"nvidia.com/gpu": 4},
        "taints": (CLASS_TAINT,),
        **FULL_STACK,
    }
    return Node(name, **{**defaults, **fields})


def sliced_node(name: str = "gpu-1", gpus: int = 1, replicas: int = 4, **fields: Any) -> Node:
    """A node whose GPUs the device plugin time-slices into `replicas` each."""
    sliced: dict[str, Any] = {
        "gpu_count": gpus,
        "gpu_capacity": {"nvidia.com/gpu": gpus * replicas},
        "sharing_strategy": "time_slicing",
        "time_slicing_replicas": replicas,
    }
    return gpu_node(name, **{**sliced, **fields})


def container(name: str = "main", gpu: dict[str, int] | None = None, **fields: Any) -> Container:
    limits = {k: str(v) for k, v in (gpu or {}).items()}
    return Container(name=name, image=f"registry.example.com/{name}:1", gpu_limits=limits, **fields)


def pod(
    namespace: str,
    name: str = "p",
    node: str | None = "gpu-1",
    gpu: dict[str, int] | None = None,
    containers: tuple[Container, ...] | None = None,
    **fields: Any,
) -> Pod:
    """A running pod; `gpu` gives its single container GPU limits."""
    return Pod(
        namespace=namespace,
        name=name,
        node_name=node,
        phase=fields.pop("phase", "Running"),
        containers=containers if containers is not None else (container(gpu=gpu),),
        **fields,
    )


def host_path(name: str, path: str) -> Volume:
    return Volume(name=name, host_path=path, kind="hostPath")


def mount(name: str, path: str = "/mnt") -> VolumeMount:
    return VolumeMount(name=name, mount_path=path)


def env(name: str, value: str | None, value_from: str | None = None) -> EnvVar:
    return EnvVar(name, value, value_from)


# The platform's namespaces in these worlds: the GPU Operator's and the platform team's tools.
PLATFORM = ("batch", "gpu-operator", "monitoring", "tools")


def inputs(
    *,
    nodes: tuple[Node, ...] = (),
    pods: tuple[Pod, ...] = (),
    tenants: tuple[TenantInfo, ...] = (),
    namespaces: tuple[str, ...] | None = None,
    **snapshot: Any,
) -> PostureInputs:
    """Inputs for one cluster; namespaces default to every tenant's and pod's namespace.
    PLATFORM are platform namespaces, as the sync records those it finds (the GPU Operator's
    Deployment and the namespace labels are not in these worlds); every other namespace no
    tenant claims is unclassified."""
    snapshot.setdefault("platform_namespaces", PLATFORM)
    if namespaces is None:
        names = {ns for t in tenants for ns in t.namespaces} | {p.namespace for p in pods}
        namespaces = tuple(sorted(names))
    snap = ClusterSnapshot(
        nodes=nodes, pods=pods, namespaces=tuple(Namespace(n) for n in namespaces), **snapshot
    )
    return PostureInputs(cluster="test", snapshot=snap, tenants=tenants)


def run(check_id: str, world: PostureInputs) -> list[FindingDraft]:
    """One check's drafts as evaluation stores them: the drafts of one cause merged."""
    return merge_drafts(CHECKS[check_id].evaluate(world))


def tenants_of(drafts: list[FindingDraft]) -> set[str]:
    """Every tenant some draft affects."""
    return {slug for d in drafts for slug in d.tenants}


def by_pair(drafts: list[FindingDraft]) -> dict[tuple[str, ...], FindingDraft]:
    """Co-tenancy drafts by the pair of tenants they affect (one finding per pair)."""
    result = {d.tenants: d for d in drafts}
    assert len(result) == len(drafts), "expected one finding per pair of tenants"
    return result


def container_entry(draft: FindingDraft, name: str | None = None) -> dict[str, Any]:
    """The evidence entry of a container a pod check flagged: the only one, or the one named
    (posture.rules.pod.container_findings lists them in `containers`)."""
    entries = draft.evidence["containers"]
    if name is None:
        (entry,) = entries
        return entry
    return next(e for e in entries if e["container"] == name)


def container_names(draft: FindingDraft) -> list[str]:
    """The containers a pod check's finding lists, in order."""
    return [e["container"] for e in draft.evidence["containers"]]
