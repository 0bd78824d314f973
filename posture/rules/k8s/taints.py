"""K8S-002: GPU nodes without a taint that separates tenant classes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from inventory.snapshot import Node
from posture.inputs import PostureInputs, TenantInfo
from posture.rules.common import sorted_nodes, tenants_on_node
from posture.rules.registry import FindingDraft, check
from posture.rules.subjects import node_draft

SEPARATING_EFFECTS = ("NoSchedule", "NoExecute")
# Every GPU pod and the whole GPU Operator tolerate this key, so it keeps CPU pods off GPU
# nodes but does not separate one tenant class from another.
GENERIC_GPU_TAINT = "nvidia.com/gpu"


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
        yield _taint_draft(node, tenants_on_node(inputs, node.name))


def _taint_draft(node: Node, tenants: list[TenantInfo]) -> FindingDraft:
    evidence: dict[str, Any] = {
        "node": node.name,
        "gpu_model": node.gpu_model,
        "gpu_count": node.gpu_count,
        "taints": [f"{t.key}={t.value}:{t.effect}" for t in node.taints],
        "ignored": f"{GENERIC_GPU_TAINT} (tolerated by every GPU pod) and PreferNoSchedule",
        "tenants_on_node": [{"tenant": t.slug, "trust_class": t.trust_class.slug} for t in tenants],
    }
    return node_draft(
        "K8S-002", node, tenants=tenants, evidence=evidence,
        title=f"GPU node {node.name} has no taint that separates tenant classes",
    )  # fmt: skip
