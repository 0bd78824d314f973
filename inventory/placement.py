"""Would a DaemonSet run a pod on this node? PURE: no Django, no network.

The scheduler's rules, as far as a DaemonSet's pod template decides them: its nodeSelector, its
required node affinity, and the node's NoSchedule / NoExecute taints against its tolerations
(plus the ones the DaemonSet controller adds to every pod it makes). gpuposture asks this to
tell a component that is not deployed on a node (its DaemonSet does not schedule there) from one
whose pod is missing (it should run there, so its version is unknown).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from inventory.snapshot import Taint, Workload

# Added by the DaemonSet controller to every pod it creates (pkg/controller/daemon/util), so a
# node under pressure or cordoned still runs its DaemonSets.
CONTROLLER_TOLERATIONS: tuple[dict[str, str], ...] = tuple(
    {"key": f"node.kubernetes.io/{key}", "operator": "Exists", "effect": effect}
    for key, effect in (
        ("not-ready", "NoExecute"),
        ("unreachable", "NoExecute"),
        ("disk-pressure", "NoSchedule"),
        ("memory-pressure", "NoSchedule"),
        ("pid-pressure", "NoSchedule"),
        ("unschedulable", "NoSchedule"),
        ("network-unavailable", "NoSchedule"),
    )
)
_BLOCKING = ("NoSchedule", "NoExecute")


@dataclass(frozen=True)
class Fit:
    """`fits`: True (a pod belongs there), False (never there), None (cannot tell); `why` in
    words a person can check against the objects."""

    fits: bool | None
    why: str


def workload_fit(
    node_name: str, labels: Mapping[str, str], taints: Iterable[Taint], ds: Workload
) -> Fit:
    """daemonset_fit with the DaemonSet's own placement fields."""
    return daemonset_fit(
        node_name,
        labels,
        taints,
        node_selector=ds.node_selector,
        tolerations=ds.tolerations,
        affinity_terms=ds.affinity_terms,
    )


def daemonset_fit(
    node_name: str,
    labels: Mapping[str, str],
    taints: Iterable[Taint],
    *,
    node_selector: Mapping[str, str],
    tolerations: Sequence[Mapping[str, Any]],
    affinity_terms: Sequence[Mapping[str, Any]],
) -> Fit:
    missing = {k: v for k, v in node_selector.items() if labels.get(k) != v}
    if missing:
        shown = ", ".join(f"{k}={v}" for k, v in sorted(missing.items()))
        return Fit(False, f"its nodeSelector {shown} does not match the node's labels")
    affinity = _affinity(node_name, labels, affinity_terms)
    if affinity is not True:
        why = (
            "its required node affinity excludes the node"
            if affinity is False
            else ("its required node affinity uses an operator gpuposture cannot evaluate")
        )
        return Fit(affinity, why)
    allowed = [*tolerations, *CONTROLLER_TOLERATIONS]
    blocking = [t for t in taints if t.effect in _BLOCKING and not _tolerated(t, allowed)]
    if blocking:
        shown = ", ".join(_taint_text(t) for t in blocking)
        return Fit(False, f"it does not tolerate the node's taint {shown}")
    return Fit(True, "its nodeSelector, affinity and tolerations admit the node")


def _taint_text(taint: Taint) -> str:
    value = f"={taint.value}" if taint.value else ""
    return f"{taint.key}{value}:{taint.effect}"


def _tolerated(taint: Taint, tolerations: Iterable[Mapping[str, Any]]) -> bool:
    return any(_tolerates(t, taint) for t in tolerations)


def _tolerates(toleration: Mapping[str, Any], taint: Taint) -> bool:
    effect = toleration.get("effect") or ""
    if effect and effect != taint.effect:
        return False
    key = toleration.get("key") or ""
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return not key or key == taint.key  # an empty key with Exists tolerates every taint
    return key == taint.key and (toleration.get("value") or "") == taint.value


def _affinity(
    node_name: str, labels: Mapping[str, str], terms: Sequence[Mapping[str, Any]]
) -> bool | None:
    """The terms are ORed; no terms means no constraint. None: an operator we cannot judge."""
    if not terms:
        return True
    results = [_term(node_name, labels, term) for term in terms]
    if any(r is True for r in results):
        return True
    return None if any(r is None for r in results) else False


def _term(node_name: str, labels: Mapping[str, str], term: Mapping[str, Any]) -> bool | None:
    expressions = _requirements(term.get("matchExpressions"))
    fields = _requirements(term.get("matchFields"))
    if not expressions and not fields:
        return False  # an empty term matches no node (the API's own rule)
    checks = [_requirement(labels.get(r["key"]), r) for r in expressions]
    checks += [_requirement(node_name if r["key"] == "metadata.name" else None, r) for r in fields]
    if any(c is False for c in checks):
        return False
    return None if any(c is None for c in checks) else True


def _requirements(value: Any) -> list[dict[str, Any]]:
    if not isinstance(value, list | tuple):
        return []
    return [r for r in value if isinstance(r, Mapping) and isinstance(r.get("key"), str)]


def _requirement(value: str | None, requirement: Mapping[str, Any]) -> bool | None:
    operator = requirement.get("operator")
    values = [str(v) for v in requirement.get("values") or ()]
    if operator == "In":
        return value in values
    if operator == "NotIn":
        return value not in values
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    if operator in ("Gt", "Lt") and len(values) == 1:
        return _compare(value, values[0], operator)
    return None


def _compare(value: str | None, bound: str, operator: str) -> bool:
    try:
        left, right = int(value or ""), int(bound)
    except ValueError:
        return False  # a label that is not an integer never matches Gt / Lt
    return left > right if operator == "Gt" else left < right
