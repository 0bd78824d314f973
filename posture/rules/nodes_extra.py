"""LEAK-002, STACK-006, ATTR-002: node-level facts about GPU memory residue, device injection
and attribution (DESIGN §2, §5)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import partial
from typing import Any

from inventory.runtime import CDI_NODE_LABEL, CDI_NODE_LABEL_ON
from inventory.snapshot import GpuOperatorPolicy, Node
from posture.inputs import PostureInputs, TenantInfo
from posture.rules.common import (
    GpuHolding,
    gpu_holdings,
    holding_evidence,
    per_tenant,
    sorted_nodes,
    tenants_on_node,
)
from posture.rules.registry import FindingDraft, check

# --- LEAK-002 ------------------------------------------------------------------------------

# LeftoverLocals, CERT/CC VU#446598 (CVE-2023-4969): GPU local memory is not cleared between
# kernels, so one process can read what another left there. The advisory lists GPUs of AMD
# (Radeon and Instinct lines, AMD-SB-6010), Apple (M1/M2, A-series before A17), Qualcomm
# (Adreno) and Imagination (PowerVR) as affected; NVIDIA, Intel and Arm GPUs are not.
LEFTOVERLOCALS_AFFECTED: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("AMD", re.compile(r"\bamd\b|\bradeon\b|\binstinct\b|\bmi\s?\d{2,3}[a-z]*\b")),
    ("Apple", re.compile(r"\bapple\b.*\b(m1|m2|a1[456])\b")),
    ("Qualcomm", re.compile(r"\bqualcomm\b|\badreno\b")),
    ("Imagination", re.compile(r"\bimagination\b|\bpowervr\b")),
)
NOT_AFFECTED = re.compile(r"\bnvidia\b|\bintel\b|\barm\b|\bmali\b")
# Where the model is written: GFD's product (Node.gpu_model) and the AMD GPU labeller's labels.
AMD_MODEL_LABELS = (
    "amd.com/gpu.product-name",
    "beta.amd.com/gpu.product-name",
    "amd.com/gpu.family",
    "beta.amd.com/gpu.family",
)
AMD_LABEL_PREFIXES = ("amd.com/gpu", "beta.amd.com/gpu")


def _words(text: str) -> str:
    return re.sub(r"[_\-/.,]+", " ", text).lower()


def leftoverlocals_match(node: Node) -> dict[str, Any] | None:
    """What identifies the node's GPUs as affected by VU#446598, or None."""
    sources = [("gpu_model", node.gpu_model)] + [
        (f"labels[{key}]", node.labels.get(key)) for key in AMD_MODEL_LABELS
    ]
    for where, value in sources:
        if not value or NOT_AFFECTED.search(_words(value)):
            continue
        for vendor, pattern in LEFTOVERLOCALS_AFFECTED:
            if pattern.search(_words(value)):
                return {"vendor": vendor, "source": where, "model": value}
    # The AMD labeller encodes some values in the key ("beta.amd.com/gpu.family.AI": "1").
    amd_keys = sorted(k for k in node.labels if k.startswith(AMD_LABEL_PREFIXES))
    if amd_keys:
        return {"vendor": "AMD", "source": f"labels[{amd_keys[0]}]", "model": None}
    return None


@check(
    id="LEAK-002",
    title="GPU model affected by LeftoverLocals (VU#446598) shared between tenants",
    severity="high",
    scope="node",
    rationale=(
        "LeftoverLocals (CERT/CC VU#446598, CVE-2023-4969) lets a kernel read the GPU local "
        "memory another process's kernel left behind, on some AMD, Apple, Qualcomm and "
        "Imagination GPUs (not NVIDIA). Fragments of a neighbour's model weights, prompts "
        "and outputs can be reconstructed this way, whether the tenants run concurrently or "
        "one after the other on the same GPU. Resource requests for non-NVIDIA GPUs "
        "(`amd.com/gpu`) are not inventoried, so every tenant with an active pod on the node "
        "counts as a user of its GPUs."
    ),
    remediation=(
        "Do not share these GPUs between tenants: taint the node for a single tenant "
        "(`kubectl taint nodes <node> gpuposture.io/tenant=<tenant>:NoSchedule` with the "
        "matching toleration on that tenant only) until the vendor's mitigation is installed "
        "(for AMD, the driver/firmware update of bulletin AMD-SB-6010 that clears local "
        "memory between kernels), then verify the driver version against the bulletin."
    ),
    mappings=("SP800-53:SC-4",),
)
def leftoverlocals_shared(inputs: PostureInputs) -> Iterator[FindingDraft]:
    for node in sorted_nodes(inputs):
        match = leftoverlocals_match(node)
        if match is None:
            continue
        tenants = _gpu_users(inputs, node)
        if len(tenants) < 2:
            continue
        for tenant in tenants:
            yield _leak_draft(node, match, tenants, tenant.slug)


def _gpu_users(inputs: PostureInputs, node: Node) -> list[TenantInfo]:
    """Tenants holding an inventoried GPU resource on the node, or with any active pod on it
    when the node has no NVIDIA resources (other vendors' requests are not inventoried)."""
    if node.is_gpu_node:
        found = {h.tenant.slug: h.tenant for h in gpu_holdings(inputs, node) if h.tenant}
        return [found[slug] for slug in sorted(found)]
    return tenants_on_node(inputs, node.name)


def _leak_draft(
    node: Node, match: dict[str, Any], tenants: list[TenantInfo], slug: str
) -> FindingDraft:
    evidence = {
        "node": node.name,
        "advisory": "CERT/CC VU#446598 (LeftoverLocals, CVE-2023-4969)",
        "affected_by": match,
        "tenant": slug,
        "tenants_on_node": [{"tenant": t.slug, "trust_class": t.trust_class.slug} for t in tenants],
        "counted_by": (
            "nvidia.com/* GPU resources held"
            if node.is_gpu_node
            else "active pods on the node (amd.com/* and other vendors' requests are not "
            "inventoried)"
        ),
    }
    others = ", ".join(t.slug for t in tenants if t.slug != slug)
    return FindingDraft(
        check_id="LEAK-002",
        tenant=slug,
        subject_kind="Node",
        subject_namespace="",
        subject_name=node.name,
        evidence=evidence,
        title=(
            f"Tenant {slug} shares LeftoverLocals-affected {match['vendor']} GPUs on node "
            f"{node.name} with {others}"
        ),
        subject_labels=dict(node.labels),
    )


# --- STACK-006 -----------------------------------------------------------------------------


def cdi_gap(inputs: PostureInputs, node: Node) -> dict[str, Any] | None:
    """Why the node's device injection is not known to use CDI, or None when it does."""
    policies = sorted(inputs.snapshot.gpu_operator_policies, key=lambda p: p.name)
    if policies:
        if any(p.spec.get("cdi_enabled") is True for p in policies):
            return None
        return {
            "source": "GPU Operator ClusterPolicy",
            "cluster_policies": [_policy_state(p) for p in policies],
        }
    label = node.labels.get(CDI_NODE_LABEL)
    if label is not None and label.strip().lower() in CDI_NODE_LABEL_ON:
        return None
    return {
        "source": "node label (no GPU Operator ClusterPolicy in the snapshot)",
        "label": CDI_NODE_LABEL,
        "value": label,
    }


def _policy_state(policy: GpuOperatorPolicy) -> dict[str, Any]:
    enabled = policy.spec.get("cdi_enabled")
    return {
        "name": policy.name,
        "field": "spec.cdi.enabled",
        "cdi_enabled": enabled,
        "meaning": "disabled" if enabled is False else "not set (default depends on version)",
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
        "`gpuposture.io/cdi=enabled`."
    ),
    mappings=("SP800-53:CM-6",),
)
def cdi_not_used(inputs: PostureInputs) -> Iterator[FindingDraft]:
    for node in sorted_nodes(inputs):
        if not node.is_gpu_node:
            continue
        gap = cdi_gap(inputs, node)
        if gap is None:
            continue
        tenants = tenants_on_node(inputs, node.name)
        yield from per_tenant(tenants, partial(_cdi_draft, node, gap, tenants))


def _cdi_draft(
    node: Node, gap: dict[str, Any], tenants: list[TenantInfo], slug: str | None
) -> FindingDraft:
    evidence = {
        "node": node.name,
        "gpu_model": node.gpu_model,
        "container_toolkit_version": node.container_toolkit_version,
        "gpu_operator_version": node.gpu_operator_version,
        **gap,
        "tenants_on_node": [t.slug for t in tenants],
    }
    return FindingDraft(
        check_id="STACK-006",
        tenant=slug,
        subject_kind="Node",
        subject_namespace="",
        subject_name=node.name,
        evidence=evidence,
        title=f"GPU node {node.name} does not use CDI for device injection",
        subject_labels=dict(node.labels),
    )


# --- ATTR-002 ------------------------------------------------------------------------------

UNATTRIBUTABLE_MODES = ("time_slicing", "mps")


@check(
    id="ATTR-002",
    title="GPU utilisation on time-sliced or MPS GPUs cannot be attributed per workload",
    severity="low",
    scope="node",
    rationale=(
        "DCGM-Exporter reads utilisation per physical GPU (or per MIG instance). When a GPU "
        "is time-sliced or shared through MPS its `pod`/`namespace` labels name only one of "
        "the pods holding a replica, or none, so the usage of a tenant's workload cannot be "
        "told apart from its neighbours': chargeback, anomaly detection and compute-hijacking "
        "detection for that tenant carry a low confidence, never a per-pod figure."
    ),
    remediation=(
        "Where per-tenant attribution is required, give the tenant whole GPUs or MIG GPU "
        "instances (DCGM reports per `GPU_I_ID`), i.e. a node pool whose "
        "`nvidia.com/device-plugin.config` has no `sharing` section. Otherwise record that "
        "the tenant's GPU usage is attributed per node only, and keep DCGM-Exporter's "
        "Kubernetes mapping on (`DCGM_EXPORTER_KUBERNETES=true`) for the nodes that allow it."
    ),
    mappings=("SP800-53:AU-10",),
)
def unattributable_utilisation(inputs: PostureInputs) -> Iterator[FindingDraft]:
    for node in sorted_nodes(inputs):
        shared: dict[str, list[GpuHolding]] = {}
        platform_pods = 0
        for holding in gpu_holdings(inputs, node):
            if holding.mode not in UNATTRIBUTABLE_MODES:
                continue
            if holding.tenant is None:
                platform_pods += 1
            else:
                shared.setdefault(holding.tenant.slug, []).append(holding)
        for slug, own in sorted(shared.items()):
            yield _attr_draft(node, slug, own, sorted(set(shared) - {slug}), platform_pods)


def _attr_draft(
    node: Node, slug: str, own: list[GpuHolding], others: list[str], platform_pods: int
) -> FindingDraft:
    modes = sorted({h.mode for h in own})
    evidence = {
        "node": node.name,
        "gpu_model": node.gpu_model,
        "node_sharing_strategy": node.sharing_strategy,
        "sharing_modes": modes,
        "time_slicing_replicas": node.time_slicing_replicas,
        "tenant": slug,
        "tenant_pods": holding_evidence(own),
        "other_tenants_on_shared_gpus": others,
        "platform_gpu_holdings": platform_pods,
        "attribution": "none: DCGM-Exporter cannot attribute a shared GPU's usage per pod",
    }
    return FindingDraft(
        check_id="ATTR-002",
        tenant=slug,
        subject_kind="Node",
        subject_namespace="",
        subject_name=node.name,
        evidence=evidence,
        title=(
            f"GPU usage of tenant {slug} on node {node.name} ({', '.join(modes)}) cannot be "
            "attributed per workload"
        ),
        subject_labels=dict(node.labels),
    )
