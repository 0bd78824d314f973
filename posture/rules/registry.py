"""The check registry: every check's metadata and the pure function that evaluates it."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from gpuposture.base.enums import CheckScope, Severity
from posture.exemptions import Exemption
from posture.inputs import PostureInputs

SEVERITIES = Severity.values()
SCOPES = CheckScope.values()
# One narrower subject a finding spans, as the alternatives it may have been filed under:
# (kind, namespace, name, key) each (FindingDraft.covers).
Covered = tuple[tuple[str, str, str, str], ...]


@dataclass(frozen=True)
class FindingDraft:
    """What a check reports; posture.services turns drafts into stored Findings.

    A draft is one cause: the thing one action changes (DESIGN §5). Its identity is
    `identity()` (with the cluster, the finding's fingerprint), with no tenant in it: the
    tenants it affects are data. Checks never build drafts by hand; posture/rules/subjects.py
    has one builder per kind of subject, so labels, tenants and exposure are set alike."""

    check_id: str
    tenants: tuple[str, ...]  # slugs of the tenants it affects, sorted; () for none
    subject_kind: str  # "Deployment", "Pod", "Node", "NodePool", "Namespace", "ConfigMap", ...
    subject_namespace: str
    subject_name: str
    evidence: dict[str, Any]
    # Distinguishes several causes of one check on one subject, each closed by its own change
    # (a resource and the pair of tenants sharing it, a bulletin exposure's upgrade, a host
    # path volume, a notebook server); part of the identity. Not the container of a pod
    # check: the containers it flags in one workload are one finding
    # (posture.rules.pod.container_findings).
    key: str = ""
    title: str = ""  # specific title; the check's title when empty
    severity: str = ""  # the check's severity when empty
    # The subject's labels, so an exemption can match platform components by label.
    subject_labels: dict[str, str] = field(default_factory=dict)
    # How many workloads, pods, GPUs or nodes the cause spans (risk grows as 1 + log2 of it).
    exposure: int = 1
    # A tenant's own exposure where it is not the whole (slug -> count): K8S-008's binding
    # reaching seven namespaces weighs a victim owning one of them by 1 (DESIGN §6: what the
    # cause spans of that tenant's). A tenant not named here takes `exposure`. Not part of the
    # identity; stored on the tenant's link (FindingTenant.exposure).
    tenant_exposures: dict[str, int] = field(default_factory=dict)
    # The narrower subjects of the same check that this one spans, all of them, each a group
    # of alternatives (kind, namespace, name, key), nearest first: set where a check's subject
    # was widened, so a risk accepted on them is carried to it, or said to no longer apply
    # (posture.acceptance_carry). STACK-008's nodes under their ClusterPolicy are one group
    # each; a pod's group is every object of its owner chain below the subject (the pod, its
    # ReplicaSet, the Deployment, a Knative Revision...): whichever of them an earlier sync
    # filed the pod under, as far up as its snapshot read the chain. Not part of the identity.
    covers: tuple[Covered, ...] = ()
    # A workload finding's owner chain: the (kind, namespace, name) in the chain of every pod
    # it covers, from the pod up to the subject (PostureInputs.owner_chain), so an exemption
    # naming a nearer controller matches (posture.exemptions.Exemption). Empty for other subjects.
    # Not part of the identity.
    chain: frozenset[tuple[str, str, str]] = frozenset()

    def identity(self) -> tuple[str, str, str, str, str]:
        return (
            self.check_id,
            self.subject_kind,
            self.subject_namespace,
            self.subject_name,
            self.key,
        )


# Evidence lists the merge step joins when two drafts share an identity (the pods of one
# workload), each with the key of its total count; the list keeps at most MEMBERS_SHOWN.
MERGED_LISTS = {"pods": "replicas"}
# Evidence lists the merge step unites, each with the field that names a member: the containers
# a check flags in a workload (posture.rules.pod.container_findings) are the same in each of
# its replicas, so each appears once, as the first replica that has it says; so are the host
# path volumes POD-003 flags (posture.rules.pod.host_paths).
UNITED_LISTS = {"containers": "container", "volumes": "volume"}
MEMBERS_SHOWN = 20
# The longest title a finding stores (posture.models.Finding.title's max_length): a check whose
# title names objects counts them past it, never leaving the store to cut it.
TITLE_MAX = 300


CheckFunction = Callable[[PostureInputs], Iterable[FindingDraft]]


# The DRA kinds a check reading who holds which device through claims needs: the claims, the
# slices publishing their devices, the classes whose config may set the sharing.
DRA_KINDS = ("ResourceClaim", "ResourceSlice", "DeviceClass")


@dataclass(frozen=True)
class Check:
    id: str
    title: str
    severity: str
    scope: str
    rationale: str
    remediation: str
    mappings: tuple[str, ...]
    evaluate: CheckFunction = field(compare=False, repr=False)
    # When a finding may be rated other than `severity`, the rule, in words: the check's page
    # says it beside findings rated otherwise, so the two never silently disagree.
    severity_rule: str = ""
    # Kinds the check reads whose absence from a sync means they were not read (every real
    # cluster has objects of them, a live list was refused, or the snapshot's own objects name
    # them: a pod's ResourceClaim or RuntimeClass, an allocated claim's ResourceSlice or
    # DeviceClass;
    # inventory.kinds_read): it is then not judged, and its stored findings are kept as they
    # were (posture.judged).
    needs: tuple[str, ...] = ()


CHECKS: dict[str, Check] = {}


def check(
    *,
    id: str,
    title: str,
    severity: str,
    scope: str,
    rationale: str,
    remediation: str,
    mappings: tuple[str, ...],
    severity_rule: str = "",
    needs: tuple[str, ...] = (),
) -> Callable[[CheckFunction], CheckFunction]:
    """Register a check function under its stable id."""
    assert severity in SEVERITIES, severity
    assert scope in SCOPES, scope

    def decorate(func: CheckFunction) -> CheckFunction:
        if id in CHECKS:
            raise ValueError(f"check {id} registered twice")
        CHECKS[id] = Check(
            id, title, severity, scope, rationale, remediation, mappings, func, severity_rule, needs
        )
        return func

    return decorate


@dataclass(frozen=True)
class Evaluation:
    drafts: tuple[FindingDraft, ...]
    # (draft, exemption id): what an exemption kept out, shown on the check's page.
    exempted: tuple[tuple[FindingDraft, int], ...] = ()


def evaluate(inputs: PostureInputs, only: Iterable[str] | None = None) -> Evaluation:
    """Evaluate every registered check (or those in `only`) over one cluster's inputs, merge
    the drafts of one cause (`merge_drafts`), and set aside what an exemption covers (per
    check and per resource, never globally)."""
    wanted = set(only) if only is not None else None
    kept: list[FindingDraft] = []
    exempted: list[tuple[FindingDraft, int]] = []
    # An exemption names its check: each draft is matched against its own check's only (in
    # their order), not against every exemption of the cluster.
    by_check: dict[str, list[Exemption]] = {}
    for e in inputs.exemptions:
        by_check.setdefault(e.check_id, []).append(e)
    for check_id in sorted(CHECKS):
        if wanted is not None and check_id not in wanted:
            continue
        for draft in merge_drafts(CHECKS[check_id].evaluate(inputs)):
            exemption = next(
                (
                    e
                    for e in by_check.get(draft.check_id, ())
                    if e.matches(
                        draft.check_id,
                        draft.subject_kind,
                        draft.subject_namespace,
                        draft.subject_name,
                        draft.subject_labels,
                        draft.chain,
                    )
                ),
                None,
            )
            if exemption is None:
                kept.append(draft)
            else:
                exempted.append((draft, exemption.id))
    return Evaluation(tuple(kept), tuple(exempted))


def merge_drafts(drafts: Iterable[FindingDraft]) -> list[FindingDraft]:
    """One draft per identity, in the order identities first appear. Pod-level checks report
    each pod (containers differ between rollout versions) and subjects.workload_draft names
    the pod's workload, so the replicas of one workload meet here: tenants are united,
    exposures added (each tenant's own too), the MERGED_LISTS joined (the first
    MEMBERS_SHOWN kept, the counts added), the UNITED_LISTS united, the worst explicit
    severity kept, the subjects covered united, the owner chains intersected; the rest is
    the first draft's."""
    merged: dict[tuple[str, ...], FindingDraft] = {}
    # The covered subjects of each identity, united here rather than in _merge: each pod of a
    # workload covers its own group (the pod is in it), and uniting them pairwise would copy
    # the growing tuple at every replica.
    covers: dict[tuple[str, ...], dict[Covered, None]] = {}
    for draft in drafts:
        identity = draft.identity()
        first = merged.get(identity)
        merged[identity] = draft if first is None else _merge(first, draft)
        if draft.covers:
            covers.setdefault(identity, {}).update(dict.fromkeys(draft.covers))
    return [
        replace(draft, covers=tuple(covers[identity]))
        if identity in covers and len(covers[identity]) != len(draft.covers)
        else draft
        for identity, draft in merged.items()
    ]


def _merge(first: FindingDraft, other: FindingDraft) -> FindingDraft:
    evidence = dict(first.evidence)
    for members, count in MERGED_LISTS.items():
        if members in first.evidence and members in other.evidence:
            joined = [*first.evidence[members], *other.evidence[members]]
            evidence[members] = joined[:MEMBERS_SHOWN]
            evidence[count] = first.evidence.get(count, 0) + other.evidence.get(count, 0)
    for members, name in UNITED_LISTS.items():
        if members in first.evidence and members in other.evidence:
            seen = {entry.get(name) for entry in first.evidence[members]}
            new = [entry for entry in other.evidence[members] if entry.get(name) not in seen]
            evidence[members] = [*first.evidence[members], *new]
    return replace(
        first,
        tenants=tuple(sorted({*first.tenants, *other.tenants})),
        evidence=evidence,
        exposure=first.exposure + other.exposure,
        tenant_exposures=_exposures_added(first, other),
        severity=worst_severity((first.severity, other.severity)),
        # What every replica's chain holds: an exemption naming one old ReplicaSet does not
        # cover the Deployment's finding while pods of another one are in it.
        chain=first.chain & other.chain,
    )


def _exposures_added(first: FindingDraft, other: FindingDraft) -> dict[str, int]:
    """Each tenant's own exposure in two drafts of one cause, added as their exposures are:
    a tenant one draft names takes that draft's figure, else the draft's whole exposure if it
    affects the tenant, else nothing from it. Empty when neither draft names any."""
    if not first.tenant_exposures and not other.tenant_exposures:
        return {}

    def part(draft: FindingDraft, tenant: str) -> int:
        if tenant in draft.tenant_exposures:
            return draft.tenant_exposures[tenant]
        return draft.exposure if tenant in draft.tenants else 0

    tenants = sorted({*first.tenants, *other.tenants})
    return {t: max(1, part(first, t) + part(other, t)) for t in tenants}


def worst_severity(severities: Iterable[str]) -> str:
    """The most severe of explicit severities ("" is the check's own and yields)."""
    known = [s for s in severities if s in SEVERITIES]
    return min(known, key=SEVERITIES.index) if known else ""


def run_checks(inputs: PostureInputs, only: Iterable[str] | None = None) -> list[FindingDraft]:
    """The drafts of every registered check (or those in `only`), exemptions applied."""
    return list(evaluate(inputs, only).drafts)
