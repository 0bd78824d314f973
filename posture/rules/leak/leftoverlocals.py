"""LEAK-002: GPUs affected by LeftoverLocals (VU#446598) shared between tenants."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from inventory.snapshot import Node
from posture.inputs import PostureInputs, TenantInfo
from posture.rules.common import gpu_holdings, sorted_nodes, tenants_on_node
from posture.rules.registry import FindingDraft, check
from posture.rules.subjects import node_draft

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
        yield _leak_draft(node, match, tenants)


def _gpu_users(inputs: PostureInputs, node: Node) -> list[TenantInfo]:
    """Tenants holding an inventoried GPU resource on the node, or with any active pod on it
    when the node has no NVIDIA resources (other vendors' requests are not inventoried)."""
    if node.is_gpu_node:
        found = {h.tenant.slug: h.tenant for h in gpu_holdings(inputs, node) if h.tenant}
        return [found[slug] for slug in sorted(found)]
    return tenants_on_node(inputs, node.name)


def _leak_draft(node: Node, match: dict[str, Any], tenants: list[TenantInfo]) -> FindingDraft:
    """One finding per node: the fix (a single tenant per node, or the vendor's update) is
    the node's, for every tenant that uses its GPUs."""
    evidence = {
        "node": node.name,
        "advisory": "CERT/CC VU#446598 (LeftoverLocals, CVE-2023-4969)",
        "affected_by": match,
        "tenants_on_node": [{"tenant": t.slug, "trust_class": t.trust_class.slug} for t in tenants],
        "counted_by": (
            "nvidia.com/* GPU resources held"
            if node.is_gpu_node
            else "active pods on the node (amd.com/* and other vendors' requests are not "
            "inventoried)"
        ),
    }
    names = ", ".join(t.slug for t in tenants)
    title = (
        f"Tenants {names} share LeftoverLocals-affected {match['vendor']} GPUs on node {node.name}"
    )
    return node_draft("LEAK-002", node, tenants=tenants, evidence=evidence, title=title)
