"""SHARE-007: a sensitive tenant on a GPU time-sliced or MPS-shared with a lower class."""

from __future__ import annotations

from collections.abc import Iterator

from inventory.snapshot import Node
from posture.inputs import PostureInputs, TrustClassInfo
from posture.rules.common import (
    PLATFORM,
    GpuHolding,
    gpu_holdings,
    holding_evidence,
    platform_trust_class,
    pools_by_mode,
    sorted_nodes,
)
from posture.rules.registry import FindingDraft, check
from posture.rules.share.parties import co_residence, node_draft, node_facts_mig, replicas

SENSITIVE_CLASS = "sensitive"


Party = tuple[str, TrustClassInfo, list[GpuHolding]]  # (tenant slug or "platform", class, ...)


def _parties(holdings: list[GpuHolding], platform: TrustClassInfo) -> list[Party]:
    grouped: dict[str, tuple[TrustClassInfo, list[GpuHolding]]] = {}
    for h in holdings:
        # Platform pods get a key no tenant slug can take: "" sorts first and is never a slug.
        name, cls = (h.tenant.slug, h.tenant.trust_class) if h.tenant else ("", platform)
        grouped.setdefault(name, (cls, []))[1].append(h)
    return [(name or PLATFORM, cls, hs) for name, (cls, hs) in sorted(grouped.items())]


@check(
    id="SHARE-007",
    title="Sensitive tenant on a GPU time-sliced or MPS-shared with a lower trust class",
    severity="critical",
    scope="gpu",
    rationale=(
        "A sensitive model or dataset never shares a physical GPU in time-sliced or MPS mode "
        "with less trusted code (DESIGN §2). Time-slicing leaves GPU memory unprotected "
        "between workloads, and MPS puts every client behind one server whose fault ends "
        "them all; a tenant of a lower class (or a platform pod, whose code the sensitive "
        "tenant's approval did not cover) on the same time-sliced or MPS resource of the node "
        "can read leftover memory, observe timing, or deny service to the sensitive workload."
    ),
    remediation=(
        "Move the sensitive tenant to its dedicated pool now: nodes tainted "
        "`gpuposture.io/trust-class=sensitive:NoSchedule` whose device-plugin config "
        "(`nvidia.com/device-plugin.config`) has no `sharing` section, or MIG GPU instances "
        "owned by that tenant alone. Delete the pods named in the evidence so they reschedule "
        "there, then reset the GPUs they used (`nvidia-smi --gpu-reset -i <gpu>`) and record "
        "the reset attestation before any other tenant uses them."
    ),
    mappings=("SP800-53:SC-4",),
)
def sensitive_on_shared_gpu(inputs: PostureInputs) -> Iterator[FindingDraft]:
    platform = platform_trust_class(inputs)
    for node in sorted_nodes(inputs):
        for (pool, mode), holdings in pools_by_mode(gpu_holdings(inputs, node)).items():
            if mode not in ("time_slicing", "mps"):
                continue
            parties = _parties(holdings, platform)
            for name, cls, own in parties:
                if cls.slug != SENSITIVE_CLASS or name == PLATFORM:
                    continue
                lower = [p for p in parties if p[1].rank < cls.rank]
                if lower:
                    yield _share007_draft(node, pool, mode, name, cls, own, lower)


def _share007_draft(
    node: Node,
    pool: str,
    mode: str,
    slug: str,
    cls: TrustClassInfo,
    own: list[GpuHolding],
    lower: list[Party],
) -> FindingDraft:
    others = sum(replicas(hs) for _, _, hs in lower)
    verdict, why = co_residence(node, pool, replicas(own), others)
    evidence = {
        **node_facts_mig(node, pool, mode),
        "co_residence": verdict,
        "co_residence_reason": why,
        "tenant": slug,
        "trust_class": cls.slug,
        "trust_class_rank": cls.rank,
        "tenant_pods": holding_evidence(own),
        "lower_class_parties": [
            {
                "party": name,
                "is_platform": name == PLATFORM and all(h.tenant is None for h in hs),
                "trust_class": peer.slug,
                "rank": peer.rank,
                "pods": holding_evidence(hs),
            }
            for name, peer, hs in lower
        ],
    }
    peers = ", ".join(f"{name} ({peer.slug})" for name, peer, _ in lower)
    title = f"Sensitive tenant {slug} shares {pool} by {mode} on node {node.name} with {peers}"
    return node_draft("SHARE-007", node, slug, evidence, key=f"{pool}:{mode}", title=title)
