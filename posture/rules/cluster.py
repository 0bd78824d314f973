"""K8S-001, K8S-002: namespace quotas and node-pool taints that keep tenants apart."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import Any

from inventory.snapshot import Namespace, Node, ResourceQuota
from posture.inputs import PostureInputs, TenantInfo
from posture.rules.common import (
    is_device_resource,
    per_tenant,
    sorted_nodes,
    tenants_on_node,
)
from posture.rules.registry import FindingDraft, check

QUOTA_PREFIXES = ("requests.", "limits.")
SEPARATING_EFFECTS = ("NoSchedule", "NoExecute")
# Every GPU pod and the whole GPU Operator tolerate this key, so it keeps CPU pods off GPU
# nodes but does not separate one tenant class from another.
GENERIC_GPU_TAINT = "nvidia.com/gpu"


def is_gpu_quota_key(key: str) -> bool:
    """`requests.nvidia.com/gpu`, `nvidia.com/gpu`, `limits.nvidia.com/gpu`, the renamed
    `.shared` resources and MIG resources such as `requests.nvidia.com/mig-1g.10gb`."""
    for prefix in QUOTA_PREFIXES:
        if key.startswith(prefix):
            key = key.removeprefix(prefix)
            break
    return is_device_resource(key)


@check(
    id="K8S-001",
    title="Tenant namespace without a ResourceQuota on GPU resources",
    severity="medium",
    scope="tenant",
    rationale=(
        "Without a quota on GPU resources one tenant can request every GPU (or every "
        "time-sliced replica) in the cluster and starve the others, and a compromised tenant "
        "account can turn the whole fleet to cryptomining. Quotas are also what makes a "
        "tenant's GPU allocation auditable against what was approved."
    ),
    remediation=(
        "Create a ResourceQuota in the namespace with `spec.hard` entries "
        '`requests.nvidia.com/gpu: "<approved count>"` and one '
        "`requests.nvidia.com/mig-<profile>` entry per MIG profile the tenant may use "
        "(`requests.nvidia.com/gpu.shared` where time-slicing renames the resource). "
        "Extended resources are quota'd by the `requests.` prefix only."
    ),
    mappings=("SP800-53:SC-6",),
)
def namespace_without_gpu_quota(inputs: PostureInputs) -> Iterator[FindingDraft]:
    by_namespace: dict[str, list[ResourceQuota]] = {}  # once, not a scan per namespace
    for quota in inputs.snapshot.quotas:
        by_namespace.setdefault(quota.namespace, []).append(quota)
    for namespace in sorted(inputs.snapshot.namespaces, key=lambda n: n.name):
        tenant = inputs.tenant_of_namespace(namespace.name)
        if tenant is None:
            continue
        quotas = sorted(by_namespace.get(namespace.name, ()), key=lambda q: q.name)
        if any(is_gpu_quota_key(key) for q in quotas for key in q.hard):
            continue
        yield _quota_draft(namespace, tenant, quotas)


def _quota_draft(
    namespace: Namespace, tenant: TenantInfo, quotas: list[ResourceQuota]
) -> FindingDraft:
    evidence = {
        "namespace": namespace.name,
        "tenant": tenant.slug,
        "quotas": [{"name": q.name, "hard_keys": sorted(q.hard)} for q in quotas],
        "expected_any_of": [
            "requests.nvidia.com/gpu",
            "nvidia.com/gpu",
            "limits.nvidia.com/gpu",
            "requests.nvidia.com/mig-<profile>",
        ],
    }
    detail = "no ResourceQuota" if not quotas else f"{len(quotas)} quota(s), none on GPUs"
    return FindingDraft(
        check_id="K8S-001",
        tenant=tenant.slug,
        subject_kind="Namespace",
        subject_namespace="",
        subject_name=namespace.name,
        evidence=evidence,
        title=f"Namespace {namespace.name} of tenant {tenant.slug} has {detail}",
    )


def separating_taints(node: Node) -> list[str]:
    """NoSchedule/NoExecute taints that can keep one tenant class off the node."""
    return [
        f"{t.key}={t.value}:{t.effect}"
        for t in node.taints
        if t.effect in SEPARATING_EFFECTS and t.key != GENERIC_GPU_TAINT
    ]


@check(
    id="K8S-002",
    title="GPU node without a NoSchedule taint for its tenant class",
    severity="high",
    scope="node",
    rationale=(
        "GPU pools are separated per trust class by taints: without a class-specific "
        "NoSchedule or NoExecute taint any tenant's GPU pod may be scheduled on the node, so "
        "an external tenant can land next to a sensitive one and the dedicated-pool "
        "requirement of external and sensitive classes cannot hold. The generic "
        "`nvidia.com/gpu` taint does not count: every GPU pod tolerates it."
    ),
    remediation=(
        "Taint the node (through the node pool's configuration, so new nodes get it) with a "
        "class-specific key, e.g. `kubectl taint nodes <node> "
        "gpuposture.io/trust-class=<class>:NoSchedule`, label it with the same class, and "
        "give only that class's workloads the matching toleration and nodeSelector (enforce "
        "the toleration with an admission policy so tenants cannot add it themselves)."
    ),
    mappings=("SP800-53:SC-39",),
)
def gpu_node_without_class_taint(inputs: PostureInputs) -> Iterator[FindingDraft]:
    for node in sorted_nodes(inputs):
        if not node.is_gpu_node or separating_taints(node):
            continue
        tenants = tenants_on_node(inputs, node.name)
        yield from per_tenant(tenants, partial(_taint_draft, node, tenants))


def _taint_draft(node: Node, tenants: list[TenantInfo], slug: str | None) -> FindingDraft:
    evidence: dict[str, Any] = {
        "node": node.name,
        "gpu_model": node.gpu_model,
        "gpu_count": node.gpu_count,
        "taints": [f"{t.key}={t.value}:{t.effect}" for t in node.taints],
        "ignored": f"{GENERIC_GPU_TAINT} (tolerated by every GPU pod) and PreferNoSchedule",
        "tenants_on_node": [{"tenant": t.slug, "trust_class": t.trust_class.slug} for t in tenants],
    }
    return FindingDraft(
        check_id="K8S-002",
        tenant=slug,
        subject_kind="Node",
        subject_namespace="",
        subject_name=node.name,
        evidence=evidence,
        title=f"GPU node {node.name} has no taint that separates tenant classes",
    )
