"""K8S-*: the Kubernetes controls that keep tenants apart (DESIGN §2, §5).

quota (K8S-001), taints (K8S-002), rbac (K8S-003..005, over the PURE evaluator rbac_eval),
notebooks (K8S-006), egress (K8S-007).
"""

from __future__ import annotations

from posture.rules.k8s import egress, notebooks, quota, rbac, taints

__all__ = ["egress", "notebooks", "quota", "rbac", "taints"]
