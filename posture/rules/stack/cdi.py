"""STACK-006: CDI not used for GPU device injection (DESIGN §5)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from inventory.runtime import CDI_NODE_LABEL, operator_toolkit, resolved_strategy, runtime_facts
from inventory.snapshot import GpuOperatorPolicy, Node
from inventory.sources.node_kinds import sandbox_default, sandbox_workload
from posture.inputs import PostureInputs, TenantInfo
from posture.rules.common import kubernetes_node, sorted_nodes, tenants_on_node
from posture.rules.gke import GKE_INJECTION, gke_stack
from posture.rules.registry import FindingDraft, check
from posture.rules.subjects import node_draft


def cdi_gap(inputs: PostureInputs, node: Node) -> dict[str, Any] | None:
    """Why the node's device injection is not known to use CDI, or None when it does (or
    injects nothing into containers: a sandbox node's GPUs go to VMs through VFIO)."""
    policies = sorted(inputs.snapshot.gpu_operator_policies, key=lambda p: p.name)
    default = sandbox_default(p.spec for p in policies if not p.error)
    if is_gpu_sandbox(node, default):
        return None
    configs = [
        {"configmap": c.configmap, "key": c.key, "device_list_strategy": c.device_list_strategy}
        for c in inputs.snapshot.sharing_configs
    ]
    readable = [(p.name, p.spec) for p in policies if not p.error]
    resolved = resolved_strategy(node)
    cdi = runtime_facts(
        node.labels,
        readable,
        configs,
        node.gpu_operator_version,
        resolved,
        operator_toolkit(node),
    )[0]
    if cdi["value"] == "on":
        return None
    gap: dict[str, Any] = {"cdi": cdi["value"] or "unknown", "source": cdi["source"]}
    if policies:
        gap["cluster_policies"] = [_policy_state(p) for p in policies]
    if not policies or operator_toolkit(node) is False:  # the node's own label decides
        gap |= {"label": CDI_NODE_LABEL, "value": node.labels.get(CDI_NODE_LABEL)}
    return gap


def _policy_state(policy: GpuOperatorPolicy) -> dict[str, Any]:
    enabled = policy.spec.get("cdi_enabled")
    return {
        "name": policy.name,
        "field": "spec.cdi.enabled",
        "cdi_enabled": enabled,
        "meaning": {False: "disabled", True: "enabled"}.get(
            enabled, "not set (on from GPU Operator v25.10.0)"
        ),
        "cdi_default": policy.spec.get("cdi_default"),
    }


@check(
    id="STACK-006",
    title="CDI not used for GPU device injection",
    severity="low",
    scope="node",
    rationale=(
        "Without the Container Device Interface, the NVIDIA Container Toolkit's legacy "
        "runtime hook decides at container start which devices to inject from environment "
        "variables, which a pod can set itself (NVIDIA_VISIBLE_DEVICES, see POD-011). With "
        "CDI the device plugin names devices from a generated spec and the runtime injects "
        "exactly those, so what a container receives is what the scheduler allocated, "
        "declared and reviewable. A MIG layout changed after the CDI "
        "spec was generated is a further risk this check cannot see (the spec's time is not "
        "in the API)."
    ),
    remediation=(
        "With the GPU Operator: `kubectl patch clusterpolicies.nvidia.com/cluster-policy "
        '--type merge -p \'{"spec": {"cdi": {"enabled": true}}}\'` (and `default: true` '
        "to make CDI the default runtime mode). Without it: run `nvidia-ctk runtime configure "
        "--runtime=containerd --cdi.enabled`, generate the spec with `nvidia-ctk cdi generate "
        "--output=/etc/cdi/nvidia.yaml` (again after every MIG reconfiguration), set the "
        "device plugin's `deviceListStrategy: cdi-cri`, and label the node "
        "`gpuposture.io/cdi=enabled`. On GKE (its own device plugin, no GPU Operator) "
        "injection is GKE's (the evidence's `injection`): nothing to set on the node; accept "
        "the finding with that reason."
    ),
    mappings=("SP800-53:CM-6",),
)
def cdi_not_used(inputs: PostureInputs) -> Iterator[FindingDraft]:
    for node in sorted_nodes(inputs):
        if not node.is_gpu_node or not kubernetes_node(node):
            continue  # how a host outside the API injects devices is not shown at all
        gap = cdi_gap(inputs, node)
        if gap is None:
            continue
        draft = _cdi_draft(inputs, node, gap, tenants_on_node(inputs, node.name))
        if gke_stack(inputs, node) and gap["cdi"] != "on":
            # Not the user's to change on GKE: said so, so the low finding reads as a fact.
            draft.evidence["injection"] = GKE_INJECTION
            draft = replace(
                draft,
                title=f"GPU node {node.name}: GPU injection is GKE-managed, not shown to use CDI",
            )
        yield draft


def _cdi_draft(
    inputs: PostureInputs, node: Node, gap: dict[str, Any], tenants: list[TenantInfo]
) -> FindingDraft:
    evidence = {
        "node": node.name,
        "gpu_model": node.gpu_model,
        "container_toolkit_version": node.container_toolkit_version,
        "gpu_operator_version": node.gpu_operator_version,
        **gap,
    }
    return node_draft(
        "STACK-006",
        node,
        inputs=inputs,
        tenants=tenants,
        evidence=evidence,
        title=(
            f"GPU node {node.name} does not use CDI for device injection"
            if gap["cdi"] == "off"
            else f"GPU node {node.name} is not shown to use CDI for device injection"
        ),
    )


def is_gpu_sandbox(node: Node, default: str) -> bool:
    """The node's GPUs go to VMs (its workload label, else the ClusterPolicy's default)."""
    return sandbox_workload(node.labels, default, node.gpu_capacity) is not None
