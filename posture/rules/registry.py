"""The check registry: every check's metadata and the pure function that evaluates it."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from posture.inputs import PostureInputs

SEVERITIES = ("critical", "high", "medium", "low")
SCOPES = ("tenant", "node", "gpu", "cluster", "provider")


@dataclass(frozen=True)
class FindingDraft:
    """What a check reports; posture.services turns drafts into stored Findings."""

    check_id: str
    tenant: str | None  # tenant slug; None for a cluster-level finding no tenant owns
    subject_kind: str  # "Pod", "Node", "Namespace", "ConfigMap", "ClusterRoleBinding", ...
    subject_namespace: str
    subject_name: str
    evidence: dict[str, Any]
    # Distinguishes several findings of one check on one subject (e.g. a container name);
    # together with the fields above it is the finding's identity across runs.
    key: str = ""
    title: str = ""  # specific title; the check's title when empty
    severity: str = ""  # the check's severity when empty
    # The subject's labels, so an exemption can match platform components by label.
    subject_labels: dict[str, str] = field(default_factory=dict)


CheckFunction = Callable[[PostureInputs], Iterable[FindingDraft]]


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
) -> Callable[[CheckFunction], CheckFunction]:
    """Register a check function under its stable id."""
    assert severity in SEVERITIES, severity
    assert scope in SCOPES, scope

    def decorate(func: CheckFunction) -> CheckFunction:
        if id in CHECKS:
            raise ValueError(f"check {id} registered twice")
        CHECKS[id] = Check(id, title, severity, scope, rationale, remediation, mappings, func)
        return func

    return decorate


@dataclass(frozen=True)
class Evaluation:
    drafts: tuple[FindingDraft, ...]
    # (draft, exemption id): what an exemption kept out, shown on the check's page.
    exempted: tuple[tuple[FindingDraft, int], ...] = ()


def evaluate(inputs: PostureInputs, only: Iterable[str] | None = None) -> Evaluation:
    """Evaluate every registered check (or those in `only`) over one cluster's inputs, and
    set aside what an exemption covers (per check and per resource, never globally)."""
    wanted = set(only) if only is not None else None
    kept: list[FindingDraft] = []
    exempted: list[tuple[FindingDraft, int]] = []
    for check_id in sorted(CHECKS):
        if wanted is not None and check_id not in wanted:
            continue
        for draft in CHECKS[check_id].evaluate(inputs):
            exemption = next(
                (
                    e
                    for e in inputs.exemptions
                    if e.matches(
                        draft.check_id,
                        draft.subject_kind,
                        draft.subject_namespace,
                        draft.subject_name,
                        draft.subject_labels,
                    )  # fmt: skip
                ),
                None,
            )
            if exemption is None:
                kept.append(draft)
            else:
                exempted.append((draft, exemption.id))
    return Evaluation(tuple(kept), tuple(exempted))


def run_checks(inputs: PostureInputs, only: Iterable[str] | None = None) -> list[FindingDraft]:
    """The drafts of every registered check (or those in `only`), exemptions applied."""
    return list(evaluate(inputs, only).drafts)
