"""SHARE-003: a tenant shares a GPU by a mode its or the other party's trust class forbids."""

from __future__ import annotations

from collections.abc import Iterator

from posture.inputs import PostureInputs, TrustClassInfo
from posture.rules.common import platform_trust_class, sorted_nodes
from posture.rules.pairs import Meeting, PairCause, pair_drafts, party_tenant
from posture.rules.registry import FindingDraft, check
from posture.rules.share.dra_names import env_reach, shared_name
from posture.rules.share.groups import shared_groups
from posture.rules.share.parties import CONCURRENT_MODES
from tenants.policy import PolicyDecision, may_share


@check(
    id="SHARE-003",
    title="A tenant shares a GPU by a mode its or the other tenant's trust class forbids",
    severity="high",
    scope="gpu",
    rationale=(
        "Two tenants may share a physical GPU only by a mode both trust classes allow"
        ": time-slicing and MPS give no fault isolation and time-slicing no memory "
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
        "change the tenant's trust class through review rather than tolerating the finding. "
        "A party that reaches the GPU through NVIDIA_VISIBLE_DEVICES (evidence `mode_basis`) "
        "is closed by removing the variable from its workload (POD-011)."
    ),
    mappings=("SP800-53:SC-39", "SP800-53:AC-4"),
)
def forbidden_sharing_mode(inputs: PostureInputs) -> Iterator[FindingDraft]:
    yield from pair_drafts("SHARE-003", _meetings(inputs), _title)


def _meetings(inputs: PostureInputs) -> Iterator[Meeting]:
    """Each pair of parties (a tenant and a tenant, or the platform's pods) sharing one
    resource of a node by a concurrent mode that one of their classes forbids."""
    platform = platform_trust_class(inputs)

    def class_of(name: str) -> TrustClassInfo:
        # An unclassified namespace's party is judged under the unclassified class.
        return inputs.tenants_by_slug[party_tenant(name)].trust_class if name else platform

    # The policy's answer depends on the two classes and the mode alone: asked once for each,
    # not once for each of the thousands of pairs of a shared cluster.
    decisions: dict[tuple[TrustClassInfo, TrustClassInfo, str], PolicyDecision] = {}

    def decide(first: str, second: str, mode: str) -> PolicyDecision:
        asked = (class_of(first), class_of(second), mode)
        if asked not in decisions:
            decisions[asked] = may_share(*asked)
        return decisions[asked]

    for node in sorted_nodes(inputs):
        for group in shared_groups(inputs, node):
            pool, mode = group.pool, group.mode
            if mode not in CONCURRENT_MODES:
                continue
            for first, second in group.pairs:
                decision = decide(first.name, second.name, mode)
                if decision.allowed:
                    continue
                details = {
                    "resource": pool,
                    "sharing_mode": mode,
                    "rule": decision.rule,
                    "forbidden_by": list(decision.forbidden_by),
                }
                if found := group.meeting(first, second, f"{pool}:{mode}", details=details):
                    yield found


def _title(cause: PairCause) -> str:
    first = cause.meetings[0]
    resource, mode = shared_name(cause, first.details["resource"]), first.details["sharing_mode"]
    forbidding = first.details["forbidden_by"]
    which = "trust class" if len(forbidding) == 1 else "trust classes"
    how = f"by {mode} in {cause.where}"
    if reach := env_reach(cause):  # the variable's time-sharing, not a configured mode
        how = f"in {cause.where}, {reach} ({mode})"
    return (
        f"{cause.who} share {resource} {how}, which {which} "
        f"{' and '.join(forbidding)} forbid{'s' if len(forbidding) == 1 else ''}"
    )
