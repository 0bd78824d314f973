"""K8S-002: GPU nodes without a taint that separates tenant classes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from inventory.snapshot import Node
from posture.inputs import PostureInputs, TenantInfo
from posture.rules.class_pools import (
    GENERIC_GPU_TAINT,
    class_labels,
    class_taints,
    class_taints_naming_none,
    naming_none_note,
    node_pool_classes,
    unrelated_taints,
)
from posture.rules.common import kubernetes_node, sorted_nodes, tenants_on_node
from posture.rules.registry import FindingDraft, check
from posture.rules.subjects import node_draft


@check(
    id="K8S-002",
    title="GPU node without a NoSchedule taint for its tenant class",
    severity="high",
    scope="node",
    rationale=(
        "GPU pools are separated per trust class by taints: without a class-specific "
        "NoSchedule or NoExecute taint any tenant's GPU pod may be scheduled on the node, so "
        "an external tenant can land next to a sensitive one and the dedicated-pool "
        "requirement of external and sensitive classes cannot hold. Only a taint that names a "
        "class counts: a key of GPUPOSTURE_POOL_TAINT_KEYS (default "
        "`gpuposture.io/trust-class`) whose value is the class, or an exact taint the class "
        "lists in the admin. And only one class's: a node tainted for two classes admits "
        "only pods that tolerate another class's taint, so it is neither class's pool (as "
        "POD-009 reads it). The generic `nvidia.com/gpu` taint (every GPU pod tolerates it) "
        "and unrelated NoSchedule taints (`dedicated=batch`) keep some pods off but say "
        "nothing about classes. The same holds for nodes of other vendors' GPUs and "
        "accelerators (`amd.com/gpu`, `gpu.intel.com/i915` / `xe`, `habana.ai/gaudi`): a "
        "pool separates tenants whatever the vendor."
    ),
    remediation=(
        "Taint the node (through the node pool's configuration, so new nodes get it) with a "
        "class-specific key, e.g. `kubectl taint nodes <node> "
        "gpuposture.io/trust-class=<class>:NoSchedule --overwrite` (`--overwrite` replaces "
        "the value of a taint the node has under that key with that effect; remove any "
        "other class's taint with `kubectl taint nodes <node> "
        "gpuposture.io/trust-class=<other>:<effect>-`: a node keeps one class's) (or a key "
        "your clusters already use, "
        "added to GPUPOSTURE_POOL_TAINT_KEYS; or an exact taint listed on the class in the "
        "admin), label it with the same class, and "
        "give only that class's workloads the matching toleration and nodeSelector (enforce "
        "the toleration with an admission policy so tenants cannot add it themselves)."
    ),
    mappings=("SP800-53:SC-39",),
)
def gpu_node_without_class_taint(inputs: PostureInputs) -> Iterator[FindingDraft]:
    for node in sorted_nodes(inputs):
        # Any vendor's GPUs: an untainted AMD or Gaudi pool mixes classes as an NVIDIA one does.
        if not node.is_accelerator_node or not kubernetes_node(node):
            continue  # a host no pod is scheduled to has no taints to set
        # One class's taint makes the node that class's pool; two or more make it none (pods
        # there tolerate another class's taint), as POD-009's class_pools.tainted_for reads it.
        if len(node_pool_classes(inputs, node)) == 1:
            continue
        yield _taint_draft(inputs, node, tenants_on_node(inputs, node.name))


def _taint_draft(inputs: PostureInputs, node: Node, tenants: list[TenantInfo]) -> FindingDraft:
    evidence: dict[str, Any] = {
        "node": node.name,
        "gpu_model": node.gpu_model,
        "gpu_count": node.gpu_count,
        # Where a sandbox node's count comes from, or why it is unknown (a vGPU host's).
        **({"gpu_count_basis": node.gpu_count_basis} if node.gpu_count_basis else {}),
        # Another vendor's GPUs, which gpu_model and gpu_count (NVIDIA's) do not describe.
        **(
            {"accelerator_resources": node.accelerator_resources}
            if node.accelerator_resources
            else {}
        ),
        "taints": [f"{t.key}={t.value}:{t.effect}" for t in node.taints],
        "class_taint_keys": list(inputs.pool_taint_rules.keys),
        "class_labels": class_labels(inputs, node),
        "unrelated_taints": unrelated_taints(inputs, node),
        **_naming_none(inputs, node),
        **_conflicting(inputs, node),
        "ignored": f"{GENERIC_GPU_TAINT} (tolerated by every GPU pod), PreferNoSchedule, and "
        "taints that name no class",
        "tenants_on_node": [{"tenant": t.slug, "trust_class": t.trust_class.slug} for t in tenants],
    }
    title = f"GPU node {node.name} has no taint that separates tenant classes"
    if conflicting := evidence.get("conflicting_class_taints"):
        classes = " and ".join(evidence["tainted_for_classes"])
        title = (
            f"GPU node {node.name} is tainted for {classes} ({', '.join(conflicting)}): "
            "no single class's pool"
        )
    elif named := evidence.get("taints_naming_no_class"):
        # Meant as a class pool: the title says why it is none (a typo reads as a pool).
        title += f": {', '.join(named)} names no trust class"
    return node_draft(
        "K8S-002", node, inputs=inputs, tenants=tenants, evidence=evidence, title=title
    )


def _conflicting(inputs: PostureInputs, node: Node) -> dict[str, Any]:
    """Evidence of the taints of two or more classes on one node, if any: only a pod that
    tolerates every one of them runs there, so each runs beside another class's taint."""
    classes = node_pool_classes(inputs, node)
    if len(classes) < 2:
        return {}
    return {
        "tainted_for_classes": classes,
        "conflicting_class_taints": class_taints(inputs, node),
        "conflict": "a pool is tainted for one trust class: a node tainted for several "
        "admits only pods that tolerate another class's taint, so it is no class's "
        "dedicated pool; keep one class's taint",
    }


def _naming_none(inputs: PostureInputs, node: Node) -> dict[str, Any]:
    """Evidence of the node's taints under a pool taint key that name no class, if any."""
    taints = class_taints_naming_none(inputs, node)
    if not taints:
        return {}
    return {"taints_naming_no_class": taints, "naming_no_class": naming_none_note(inputs, node)}
