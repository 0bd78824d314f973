"""What a scoped ResourceQuota looks at in a pod. PURE.

The API server's quota evaluator matches a pod to a quota's scopes by four facts of its spec
(posture.rules.k8s.quota_scopes judges them); they are kept so the K8S-001 evidence can say
which GPU pods a scoped quota counts, not only that some kind of pod escapes it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PodScope:
    """A pod's scope facts as its spec states them."""

    terminating: bool  # spec.activeDeadlineSeconds set (>= 0)
    best_effort: bool  # QoS BestEffort: no CPU or memory request or limit anywhere
    cross_namespace_affinity: bool  # a pod (anti-)affinity term naming other namespaces
    priority_class: str  # spec.priorityClassName, "" for none
