"""Whose rights the RBAC checks judge (K8S-003, K8S-004, K8S-008, DRA-001). PURE.

A tenant of the `platform` class is the platform team's own (DESIGN §3): its principals and
service accounts (Karpenter patching nodes, Kueue admitting jobs, the admins binding
cluster-admin) administer nodes, GPU configuration and tenants' namespaces by design. Judged as
a tenant reaching others, the least trusted grantee of all, they raised criticals for the
platform doing its job, while the same namespaces left unowned (platform namespaces) raised
nothing. Their namespaces stay protected: another tenant writing there is still K8S-008.
"""

from __future__ import annotations

from posture.inputs import PostureInputs, TenantInfo
from posture.rules.common import PLATFORM


def judged_grantees(inputs: PostureInputs) -> list[TenantInfo]:
    """The tenants whose principals' rights are judged, by slug."""
    return sorted(
        (t for t in inputs.tenants if t.trust_class.slug != PLATFORM), key=lambda t: t.slug
    )
