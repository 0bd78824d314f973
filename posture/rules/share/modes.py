"""SHARE-003: a tenant shares a GPU by a mode its or the other party's trust class forbids."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

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
from posture.rules.share.parties import (
    CONCURRENT_MODES,
    Parties,
    co_residence,
    node_facts,
    replicas,
)
from tenants.policy import may_share


@check(
    id="SHARE-003",
    title="A tenant shares a GPU by a mode its or the other tenant's trust class forbids",
    severity="high",
    scope="gpu",
    rationale=(
        "Two tenants may share a physical GPU only by a mode both trust classes allow "
        "(DESIGN §3): time-slicing and MPS give no fault isolation and time-slicing no memory "
        "isolation, compute instances of one MIG GPU instance share memory, and vGPU best "
        "effort gives no performance isolation. A class that forbids the mode was assigned "
        "because its workloads must not be exposed to, or expose, the other party that way."
    ),
    remediation=(
        "Schedule the tenant on nodes whose sharing mode its class allows: exclusive GPUs "
        "(no `sharing` section in the node's device-plugin config) or MIG GPU instances "
        "(`nvidia.com/mig.config` giving each tenant its own instances, mig strategy mixed). "
        "Enforce it with a per-class NoSchedule taint on the node pool and a matching "
        "toleration and nodeSelector on the tenant's workloads. If the sharing is intended, "
        "change the tenant's trust class through review rather than tolerating the finding."
    ),
    mappings=("SP800-53:SC-39", "SP800-53:AC-4"),
)
def forbidden_sharing_mode(inputs: PostureInputs) -> Iterator[FindingDraft]:
    platform = platform_trust_class(inputs)
    for node in sorted_nodes(inputs):
        for (pool, mode), holdings in pools_by_mode(gpu_holdings(inputs, node)).items():
            if mode not in CONCURRENT_MODES:
                continue
            parties = _parties(holdings, platform)
            for slug in sorted(p for p in parties if p):
                draft = _share003_draft(node, pool, mode, slug, parties)
                if draft is not None:
                    yield draft


def _parties(holdings: list[GpuHolding], platform: TrustClassInfo) -> Parties:
    """Tenant slug (or "" for pods no tenant owns: never a slug) -> its class and holdings."""
    parties: Parties = {}
    for h in holdings:
        name, cls = (h.tenant.slug, h.tenant.trust_class) if h.tenant else ("", platform)
        parties.setdefault(name, (cls, []))[1].append(h)
    return parties


def _violations(
    node: Node, pool: str, mode: str, slug: str, parties: Parties
) -> list[dict[str, Any]]:
    """Each peer the tenant may not share this pool with by `mode`, and the rule that says so."""
    own_class, own = parties[slug]
    violations = []
    for peer, (peer_class, theirs) in sorted(parties.items()):
        decision = may_share(own_class, peer_class, mode)
        if peer == slug or decision.allowed:
            continue
        verdict, why = co_residence(node, pool, replicas(own), replicas(theirs))
        violations.append(
            {
                "peer": peer or PLATFORM,
                "peer_is_platform": peer == "",
                "peer_trust_class": peer_class.slug,
                "rule": decision.rule,
                "forbidden_by": list(decision.forbidden_by),
                "co_residence": verdict,
                "co_residence_reason": why,
                "peer_pods": holding_evidence(theirs),
            }
        )
    return violations


def _share003_draft(
    node: Node, pool: str, mode: str, slug: str, parties: Parties
) -> FindingDraft | None:
    violations = _violations(node, pool, mode, slug, parties)
    if not violations:
        return None
    own_class, own = parties[slug]
    evidence = {
        **node_facts(node, pool, mode),
        "tenant": slug,
        "trust_class": own_class.slug,
        "tenant_pods": holding_evidence(own),
        "violations": violations,
    }
    peers = ", ".join(f"{v['peer']} ({v['peer_trust_class']})" for v in violations)
    return FindingDraft(
        check_id="SHARE-003",
        tenant=slug,
        subject_kind="Node",
        subject_namespace="",
        subject_name=node.name,
        evidence=evidence,
        key=f"{pool}:{mode}",
        title=f"Tenant {slug} ({own_class.slug}) shares {pool} by {mode} with {peers}",
    )
