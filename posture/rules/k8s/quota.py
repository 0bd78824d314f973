"""K8S-001: tenant namespaces without a ResourceQuota on GPU resources."""

from __future__ import annotations

from collections.abc import Iterator

from inventory.snapshot import Namespace, ResourceQuota
from posture.inputs import PostureInputs, TenantInfo
from posture.rules.common import is_device_resource
from posture.rules.registry import FindingDraft, check
from posture.rules.subjects import namespace_draft

QUOTA_PREFIXES = ("requests.", "limits.")


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
        yield _quota_draft(inputs, namespace, tenant, quotas)


def _quota_draft(
    inputs: PostureInputs, namespace: Namespace, tenant: TenantInfo, quotas: list[ResourceQuota]
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
    return namespace_draft(
        "K8S-001", inputs, namespace.name, tenants=(tenant,), evidence=evidence,
        title=f"Namespace {namespace.name} of tenant {tenant.slug} has {detail}",
    )  # fmt: skip
