"""Which pods a scoped ResourceQuota counts, and whether scoped quotas leave any pod out. PURE.

A quota with `scopes` or a `scopeSelector` counts only the pods they match, as the API
server's quota evaluator decides: Terminating (the pod sets activeDeadlineSeconds) or
NotTerminating, BestEffort (no CPU or memory requests or limits, which a GPU-only pod often
is) or NotBestEffort, CrossNamespacePodAffinity, and PriorityClass by In / NotIn / Exists /
DoesNotExist on the pod's priorityClassName. A tenant chooses all of these for its own pods,
so a GPU key bounds the namespace only when, for every kind of pod the tenant could write,
some quota holding that key counts it. The kinds tried are every combination of the scopes,
with the priority classes the quotas name, none, and one they do not name.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import product
from typing import Any

from inventory.snapshot import PodScope, ResourceQuota

UNNAMED_CLASS = "any-other-class"  # a priority class no quota names


@dataclass(frozen=True)
class PodKind:
    """What a scope looks at in a pod."""

    terminating: bool
    best_effort: bool
    cross_namespace_affinity: bool
    priority_class: str  # "" for none

    def describe(self, scopes: set[str]) -> str:
        """The pod in the words of the `scopes` that decide (scope names as quotas write them)."""
        parts = []
        if scopes & {"Terminating", "NotTerminating"}:
            parts.append(("with" if self.terminating else "without") + " activeDeadlineSeconds")
        if scopes & {"BestEffort", "NotBestEffort"}:
            parts.append(
                "of QoS BestEffort" if self.best_effort else "of a QoS other than BestEffort"
            )
        if "CrossNamespacePodAffinity" in scopes:
            parts.append(
                ("with" if self.cross_namespace_affinity else "without")
                + " cross-namespace affinity"
            )
        if "PriorityClass" in scopes:
            parts.append(
                f"of priority class {self.priority_class!r}"
                if self.priority_class
                else "without a priority class"
            )
        return ", ".join(parts)


def scope_names(quotas: Iterable[ResourceQuota]) -> set[str]:
    """Every scope the quotas name, in `scopes` or their scopeSelector."""
    return {s for q in quotas for s in q.scopes} | {
        str(e.get("scopeName", "")) for q in quotas for e in q.scope_selector
    }


def counts(quota: ResourceQuota, pod: PodKind) -> bool:
    """True when the quota counts the pod (an unscoped quota counts every pod)."""
    for scope in quota.scopes:
        if not _scope_matches(scope, pod):
            return False
    for expression in quota.scope_selector:
        name = str(expression.get("scopeName", ""))
        if name == "PriorityClass":
            if not _priority_matches(expression, pod.priority_class):
                return False
        elif not _scope_matches(name, pod):
            return False  # an operator on a plain scope is In/Exists: the scope itself
    return True


def _scope_matches(scope: str, pod: PodKind) -> bool:
    return {
        "Terminating": pod.terminating,
        "NotTerminating": not pod.terminating,
        "BestEffort": pod.best_effort,
        "NotBestEffort": not pod.best_effort,
        "CrossNamespacePodAffinity": pod.cross_namespace_affinity,
    }.get(scope, False)  # a scope of other objects (VolumeAttributesClass) counts no pod


def _priority_matches(expression: dict[str, Any], priority_class: str) -> bool:
    operator = expression.get("operator")
    values = expression.get("values") or []
    if operator == "Exists":
        return bool(priority_class)
    if operator == "DoesNotExist":
        return not priority_class
    if operator == "In":
        return priority_class in values
    if operator == "NotIn":
        return priority_class not in values
    return False


def pod_kinds(quotas: Iterable[ResourceQuota]) -> Iterator[PodKind]:
    named = sorted(
        {
            str(v)
            for q in quotas
            for e in q.scope_selector
            if e.get("scopeName") == "PriorityClass"
            for v in (e.get("values") or [])
        }
    )
    for terminating, best_effort, affinity, priority in product(
        (False, True), (False, True), (False, True), ("", *named, UNNAMED_CLASS)
    ):
        yield PodKind(terminating, best_effort, affinity, priority)


def uncounted(quotas: list[ResourceQuota], keys: Iterable[str]) -> PodKind | None:
    """A kind of pod that no quota holding any of `keys` counts, or None when every kind is
    counted (always None once one unscoped quota holds a key)."""
    holding = [q for q in quotas if set(keys) & set(q.hard)]
    for pod in pod_kinds(holding):
        if not any(counts(q, pod) for q in holding):
            return pod
    return None


def counts_pod(
    quotas: list[ResourceQuota], keys: Iterable[str], scope: PodScope | None
) -> bool | None:
    """Whether some quota holding any of `keys` counts a pod with these scope facts, judged as
    `uncounted` judges a kind of pod; None where the pod's facts were not read."""
    if scope is None:
        return None
    kind = PodKind(
        scope.terminating, scope.best_effort, scope.cross_namespace_affinity, scope.priority_class
    )
    return any(counts(q, kind) for q in quotas if set(keys) & set(q.hard))
