"""Which node pool a node belongs to, from the labels cloud providers and autoscalers set.

PURE. A sharing approval may be scoped to one node pool; a node with none of these labels is
in no named pool, so only cluster-wide approvals cover it.
"""

from __future__ import annotations

from collections.abc import Mapping

# First match wins: our own label (set by the platform team) before the providers'.
POOL_LABELS: tuple[str, ...] = (
    "gpuposture.io/pool",
    "cloud.google.com/gke-nodepool",
    "eks.amazonaws.com/nodegroup",
    "alpha.eksctl.io/nodegroup-name",
    "karpenter.sh/nodepool",
    "kubernetes.azure.com/agentpool",
    "agentpool",
    "node.kubernetes.io/pool",
)


def node_pool(labels: Mapping[str, str]) -> str:
    """The node's pool name, or "" when no known pool label is set."""
    for key in POOL_LABELS:
        value = labels.get(key)
        if value:
            return value
    return ""
