"""RBAC escalation paths: rights that let a tenant take any other right. PURE (K8S-003/-004).

The API server lets a subject assume or grant rights it does not hold, by three verbs:
- `impersonate` on `groups` (core API group) for `system:masters`, cluster-wide: it then acts
  as the superuser group, which the RBAC authorizer never limits;
- `bind` on the ClusterRole `cluster-admin` (present on every cluster) with `create` on
  `clusterrolebindings`: it binds cluster-admin to itself (`bind` lifts RBAC's check that a
  binding grants no more than its author holds);
- `escalate` with `update` or `patch` on every ClusterRole: it adds any rule to a role it is
  bound to.
A grant that opens one of these paths reaches every object the node and GPU-configuration
checks guard, so those checks report its binding as if it granted the write directly.
"""

from __future__ import annotations

from typing import cast

from posture.inputs import PostureInputs, TenantInfo
from posture.rules.k8s.rbac_eval import Grant, effective_permissions

MASTERS = "system:masters"
CLUSTER_ADMIN = "cluster-admin"
RBAC_GROUP = "rbac.authorization.k8s.io"


def escalations(inputs: PostureInputs, tenant: TenantInfo) -> dict[Grant, str]:
    """The tenant's grants that open an escalation path, each with how. Computed once per
    tenant and evaluation (K8S-003 and K8S-004 both ask)."""
    key = ("escalations", tenant.slug)
    if key not in inputs.memo:
        inputs.memo[key] = _escalations(effective_permissions(inputs, tenant))
    return dict(cast("dict[Grant, str]", inputs.memo[key]))  # what this function stored


def _escalations(grants: list[Grant]) -> dict[Grant, str]:
    def cluster_wide(verb: str, group: str, resource: str, name: str | None = None) -> list[Grant]:
        return [g for g in grants if g.allows(verb, group, resource, None, name)]

    found: dict[Grant, str] = {}
    for grant in cluster_wide("impersonate", "", "groups", MASTERS):
        found.setdefault(grant, f"may impersonate group {MASTERS}")
    if cluster_wide("create", RBAC_GROUP, "clusterrolebindings"):
        for grant in cluster_wide("bind", RBAC_GROUP, "clusterroles", CLUSTER_ADMIN):
            found.setdefault(
                grant, f"may bind ClusterRole {CLUSTER_ADMIN} to itself with bind and create"
            )
    if any(cluster_wide(verb, RBAC_GROUP, "clusterroles") for verb in ("update", "patch")):
        for grant in cluster_wide("escalate", RBAC_GROUP, "clusterroles"):
            found.setdefault(grant, "may add any rule to ClusterRoles with escalate and update")
    return found
