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


def run_checks(inputs: PostureInputs, only: Iterable[str] | None = None) -> list[FindingDraft]:
    """Evaluate every registered check (or those in `only`) over one cluster's inputs."""
    wanted = set(only) if only is not None else None
    drafts: list[FindingDraft] = []
    for check_id in sorted(CHECKS):
        if wanted is not None and check_id not in wanted:
            continue
        drafts.extend(CHECKS[check_id].evaluate(inputs))
    return drafts
