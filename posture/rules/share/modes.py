"""SHARE-003: a tenant shares a GPU by a mode its or the other party's trust class forbids."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from gpuposture.base.enums import SharingMode
from posture.inputs import PostureInputs, TrustClassInfo
from posture.rules.common import platform_trust_class, sorted_nodes
from posture.rules.pairs import Meeting, PairCause, pair_drafts, party_tenant
from posture.rules.registry import DRA_KINDS, FindingDraft, check
from posture.rules.share.dra_names import env_reach, shared_name
from posture.rules.share.groups import SharedGroup, shared_groups
from posture.rules.share.mig import compute_instance_meetings, gi_profile
from posture.rules.share.parties import CONCURRENT_MODES
from tenants.policy import PolicyDecision, may_share

MIG_CI = SharingMode.MIG_CI.value


@check(
    id="SHARE-003",
    needs=DRA_KINDS,
    title="A tenant shares a GPU by a mode its or the other tenant's trust class forbids",
    severity="high",
    scope="gpu",
    rationale=(
        "Two tenants may share a physical GPU only by a mode both trust classes allow"
        ": time-slicing and MPS give no fault isolation and time-slicing no memory "
        "isolation, compute instances of one MIG GPU instance share memory, and vGPU best "
        "effort gives no performance isolation. A class that forbids the mode was assigned "
        "because its workloads must not be exposed to, or expose, the other party that way. "
        "Compute instances are paired as SHARE-002 pairs them: parties holding compute "
        "instances of one GPU-instance profile on a node (`mig-1c.3g.40gb` beside "
        "`mig-2c.3g.40gb`) possibly share a GPU instance, certainly where the node can hold "
        "only one."
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

    def judged(first: str, second: str, mode: str) -> dict[str, Any] | None:
        """The rule and the classes that forbid the pair's mode; None where both allow it."""
        decision = decide(first, second, mode)
        if decision.allowed:
            return None
        forbidden_by = list(decision.forbidden_by)
        return {"sharing_mode": mode, "rule": decision.rule, "forbidden_by": forbidden_by}

    for node in sorted_nodes(inputs):
        # NVIDIA compute instances meet by GPU-instance profile, not by resource name: the
        # pairs and verdicts SHARE-002 reports (mig.compute_instance_meetings).
        for ci in compute_instance_meetings(inputs, node, platform):
            first, second = ci.parties
            if (rule := judged(first.name, second.name, MIG_CI)) is None:
                continue
            profile = ci.details["gpu_instance_profile"]
            shown = f"compute instances of {profile} GPU instances"
            details = {**ci.details, "resource": shown, **rule}
            yield replace(ci, key=f"{profile}:{MIG_CI}", details=details)
        for group in shared_groups(inputs, node):
            pool, mode = group.pool, group.mode
            if mode not in CONCURRENT_MODES or _compute_instances(group):
                continue
            for first, second in group.pairs:
                if (rule := judged(first.name, second.name, mode)) is None:
                    continue
                details = {"resource": pool, **rule}
                if found := group.meeting(first, second, f"{pool}:{mode}", details=details):
                    yield found


def _compute_instances(group: SharedGroup) -> bool:
    """An NVIDIA compute-instance pool judged by mode: its pairs are compute_instance_meetings'
    (two CI sizes of one GPU-instance profile share a GPU instance; one CI name is not the
    unit of co-residence)."""
    return group.mode == MIG_CI and gi_profile(group.pool) is not None


def _title(cause: PairCause) -> str:
    first = cause.meetings[0]
    resource, mode = shared_name(cause, first.details["resource"]), first.details["sharing_mode"]
    forbidding = first.details["forbidden_by"]
    which = "trust class" if len(forbidding) == 1 else "trust classes"
    how = f"by {mode} in {cause.where}"
    if reach := env_reach(cause):  # the variable's time-sharing, not a configured mode
        how = f"in {cause.where}, {reach} ({mode})"
    title = (
        f"{cause.who} share {resource} {how}, which {which} "
        f"{' and '.join(forbidding)} forbid{'s' if len(forbidding) == 1 else ''}"
    )
    if "gpu_instance_profile" in first.details:
        # Which GPU instance a compute instance is in is not visible: say how sure (SHARE-002's).
        title += f" {cause.note}"
    return title
