"""K8S-*: the Kubernetes controls that keep tenants apart (DESIGN §2, §5).

quota (K8S-001), taints (K8S-002), rbac (K8S-003..005, over the PURE evaluator rbac_eval),
notebooks (K8S-006), egress (K8S-007), cross_tenant (K8S-008, over rbac_eval too, and
namespace_writes: which of a rule's verbs write in a namespace),
admission (K8S-009, over the PURE admission_cover).
"""

from __future__ import annotations

from posture.rules.k8s import admission, cross_tenant, egress, notebooks, quota, rbac, taints

__all__ = ["admission", "cross_tenant", "egress", "notebooks", "quota", "rbac", "taints"]
