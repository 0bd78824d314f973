"""Who the cluster's own multi-tenancy says owns a namespace nobody claims: hints for TEN-001's
reader, never a claim. PURE.

Capsule labels each namespace of a tenant `capsule.clastix.io/tenant: <tenant>`; the
Hierarchical Namespace Controller labels a namespace `<ancestor>.tree.hnc.x-k8s.io/depth: <n>`
for itself (0) and each ancestor; a Kubeflow Profile's namespace carries
`app.kubernetes.io/part-of: kubeflow-profile`; Rancher labels a namespace moved into a project
`field.cattle.io/projectId: <project id>`; kiosk labels a Space's namespace
`kiosk.sh/account: <account>`. These are labels: where the controller that
guards them is not running, whoever may label a namespace can write them, so gpuposture never
claims a namespace by them (DESIGN §3, fail closed). It names them so that the namespace can
be claimed for the right tenant in the tenants file.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

CAPSULE_TENANT = "capsule.clastix.io/tenant"
HNC_DEPTH_SUFFIX = ".tree.hnc.x-k8s.io/depth"
PART_OF = "app.kubernetes.io/part-of"
KUBEFLOW_PROFILE = "kubeflow-profile"
RANCHER_PROJECT = "field.cattle.io/projectId"
KIOSK_ACCOUNT = "kiosk.sh/account"
NOTE = (
    "what the cluster's own multi-tenancy labels say; gpuposture does not claim a namespace by "
    "them (anyone who may label a namespace could write them): claim it in the tenants file"
)


def owner_hints(
    labels: Mapping[str, str], owners: Mapping[str, str], tenants: set[str]
) -> dict[str, Any]:
    """Hints from a namespace's `labels`: its Capsule tenant (and whether a tenant of ours has
    that slug), its HNC ancestors nearest first with the tenant claiming each (`owners`:
    namespace -> tenant slug), whether a Kubeflow Profile owns it, its Rancher project and its
    kiosk account; {} when none."""
    hints: dict[str, Any] = {}
    capsule = labels.get(CAPSULE_TENANT, "").strip()
    if capsule:
        hints["capsule_tenant"] = capsule
        hints["capsule_tenant_is_ours"] = capsule in tenants
    ancestors = _hnc_ancestors(labels)
    if ancestors:
        hints["hnc_ancestors"] = [
            {"namespace": ns, "depth": depth, "claimed_by": owners.get(ns)}
            for depth, ns in ancestors
        ]
    if labels.get(PART_OF) == KUBEFLOW_PROFILE:
        hints["kubeflow_profile"] = True
    if project := labels.get(RANCHER_PROJECT, "").strip():
        hints["rancher_project"] = project
    if account := labels.get(KIOSK_ACCOUNT, "").strip():
        hints["kiosk_account"] = account
    return {**hints, "note": NOTE} if hints else {}


def _hnc_ancestors(labels: Mapping[str, str]) -> list[tuple[int, str]]:
    found = []
    for key, value in labels.items():
        if not key.endswith(HNC_DEPTH_SUFFIX) or not value.strip().isdigit():
            continue
        depth = int(value)
        if depth > 0:  # depth 0 is the namespace itself
            found.append((depth, key.removesuffix(HNC_DEPTH_SUFFIX)))
    return sorted(found)
