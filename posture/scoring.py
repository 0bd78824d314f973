"""A tenant's risk points, score (0-100) and grade (A-F) from its findings (DESIGN §6).

PURE: takes ScoreItems and the tenant's class weight, returns a ScoreResult; no ORM.
- Risk points: each OPEN finding gives each tenant it affects
  severity weight x the tenant's class weight x exposure factor (1 + log2(n), n the workloads
  or GPUs the cause spans of that tenant's). Accepted and resolved findings give nothing.
- Score: 100 x exp(-risk / K), a smooth, strictly decreasing function with no floor: a finite
  risk never reaches 0, so tenants keep their order however bad they are.
- Deterministic: contributions are sorted (points, check id, finding id), whatever order the
  items arrive in; explainable: the contributions' points add up to `risk`.
- Monotone: an extra open finding never lowers the risk nor raises the score or the grade.
- Capped as policy: an open critical finding makes the grade F, an open high one at most C.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

from gpuposture.base.enums import FindingStatus, Severity

MAX_SCORE = 100
# Points of one open finding before class weight and exposure. A critical is a tenant
# boundary broken now (privileged pod, time-slicing between tenants); it outweighs eight
# mediums (hygiene that makes a break easier) and forty lows (hardening). High sits near three
# mediums: a weakened boundary is worse than any number of small gaps needing each other.
SEVERITY_WEIGHTS = {"critical": 40, "high": 15, "medium": 5, "low": 1}
SEVERITY_ORDER = Severity.values()
STATUSES = FindingStatus.values()
_STATUS_SET = frozenset(STATUSES)
# The risk at which the score is 100/e (about 37). Measured on the demo world (docs/scoring.md):
# its six tenants' risks (about 100 to 5,700) spread their scores from 95 to 10.
K = 2500.0
# Lowest score for each grade, best first; below the last threshold is F.
GRADE_THRESHOLDS = (("A", 90), ("B", 80), ("C", 70), ("D", 60))
GRADES = ("A", "B", "C", "D", "F")
# Best grade allowed while an open finding of the severity exists.
GRADE_CAPS = {"critical": "F", "high": "C"}
# The smallest score a float holds: exp(-R/K) underflows to 0.0 only for R > ~745 K, and a
# finite risk must never show 0.
_SMALLEST = math.ulp(0.0)


# ScoreItem and Contribution are named tuples, not frozen dataclasses: a score of a large world
# builds one per live finding and one per (tenant, open finding) pair (26,000 and 60,000 at a
# tenth of the worst world), and a frozen dataclass's __init__ sets each field through
# object.__setattr__, three times the cost of a tuple (0.2 of a 0.5 s scores phase).
class ScoreItem(NamedTuple):
    finding_id: int | str
    check_id: str
    severity: str
    status: str  # "open", "accepted" or "resolved"
    title: str = ""
    # Workloads or GPUs the cause spans of this tenant's: the link's own exposure where it has
    # one (FindingTenant.exposure), else the finding's.
    exposure: int = 1


class Contribution(NamedTuple):
    finding_id: int | str
    check_id: str
    severity: str
    exposure: int
    points: float  # risk points this finding adds (positive)
    share: float  # percent of the tenant's risk
    reason: str


@dataclass(frozen=True)
class ScoreResult:
    risk: float
    score: float
    grade: str
    contributions: tuple[Contribution, ...]
    # The ceiling in force, in words naming the finding (None without an open critical or
    # high), whether or not the score alone already gave a lower grade.
    cap: str | None


def exposure_factor(exposure: int) -> float:
    """1 + log2(n): twelve replicas weigh more than one, but not twelve times (diminishing
    returns: the fix is one change either way). n <= 1 counts as 1."""
    return 1.0 + math.log2(exposure) if exposure > 1 else 1.0


def finding_risk(
    *,
    severity: str,
    exposure: int,
    class_weight: float,
    severity_weights: Mapping[str, float] = SEVERITY_WEIGHTS,
) -> float:
    """Risk points one OPEN finding gives one tenant it affects (rounded to 0.01)."""
    return round(severity_weights[severity] * class_weight * exposure_factor(exposure), 2)


def finding_risk_per_tenant(
    *,
    severity: str,
    exposure: int,
    class_weights: Mapping[str, float],
    severity_weights: Mapping[str, float] = SEVERITY_WEIGHTS,
) -> dict[str, float]:
    """An open finding's risk points for each tenant it affects, given as tenant -> class
    weight: what closing it removes (an action's "risk removed" sums these)."""
    return {
        tenant: finding_risk(
            severity=severity,
            exposure=exposure,
            class_weight=weight,
            severity_weights=severity_weights,
        )
        for tenant, weight in class_weights.items()
    }


def score_for(risk: float, k: float = K) -> float:
    """100 x exp(-risk/k): 100 with no risk, strictly decreasing, above 0 for a finite risk."""
    return max(MAX_SCORE * math.exp(-risk / k), _SMALLEST)


def shown_score(raw: float) -> float:
    """The score as shown (API and pages): whole from 10 up, one decimal below 10, rounded
    down, so any risk shows below 100 and a larger risk never shows a higher score; never 0
    (DESIGN §6): a score below 0.1 shows 0.1. Tenants are ordered by risk points, which keep
    apart what the shown score no longer can."""
    if raw >= MAX_SCORE:
        return float(MAX_SCORE)
    if raw >= 10:
        return float(math.floor(raw))
    return max(math.floor(raw * 10) / 10, SMALLEST_SHOWN)


SMALLEST_SHOWN = 0.1


def grade_for(score: float) -> str:
    for grade, minimum in GRADE_THRESHOLDS:
        if score >= minimum:
            return grade
    return "F"


def _validate(item: ScoreItem) -> None:
    # A typo in a severity or status must not silently score as harmless.
    if item.severity not in SEVERITY_WEIGHTS:
        raise ValueError(f"finding {item.finding_id}: unknown severity {item.severity!r}")
    if item.status not in _STATUS_SET:  # a set: called for every finding of every tenant
        raise ValueError(f"finding {item.finding_id}: unknown status {item.status!r}")


def _reason(item: ScoreItem, class_weight: float, weights: Mapping[str, float]) -> str:
    exposure = max(item.exposure, 1)
    spread = (
        f" x exposure {exposure} (1 + log2 {exposure} = {exposure_factor(exposure):.2f})"
        if exposure > 1
        else ""
    )
    return (
        f"open {item.severity} {weights[item.severity]:g} x class weight {class_weight:g}{spread}"
    )


def _cap(contributions: list[Contribution]) -> str | None:
    """Why the grade is capped, naming the largest open finding of the most severe kind."""
    for severity, ceiling in GRADE_CAPS.items():
        for c in contributions:  # largest first
            if c.severity == severity:
                label = f"{c.check_id} (finding {c.finding_id})"
                return f"open {severity} finding {label} caps the grade at {ceiling}"
    return None


def score_findings(
    items: Iterable[ScoreItem],
    *,
    class_weight: float = 1.0,
    severity_weights: Mapping[str, float] = SEVERITY_WEIGHTS,
    k: float = K,
) -> ScoreResult:
    """Score one tenant's findings: only open ones count, each with its risk points."""
    given = list(items)
    # A tenant's findings have a handful of distinct severities and statuses: check those,
    # and walk the items only to name the first bad one.
    if not (
        {item.severity for item in given} <= SEVERITY_WEIGHTS.keys()
        and {item.status for item in given} <= _STATUS_SET
    ):
        for item in given:
            _validate(item)
    counted = [item for item in given if item.status == "open"]
    # A tenant's findings share a few (severity, exposure) pairs: their points and reasons
    # are computed once each (a tenant of a large world has thousands of findings).
    risks: dict[tuple[str, int], float] = {}
    reasons: dict[tuple[str, int], str] = {}
    points: dict[int | str, float] = {}
    for item in counted:
        kind = (item.severity, item.exposure)
        if kind not in risks:
            risks[kind] = finding_risk(
                severity=item.severity,
                exposure=item.exposure,
                class_weight=class_weight,
                severity_weights=severity_weights,
            )
            reasons[kind] = _reason(item, class_weight, severity_weights)
        points[item.finding_id] = risks[kind]
    risk = round(sum(points.values()), 2)
    counted.sort(key=lambda i: (-points[i.finding_id], i.check_id, str(i.finding_id)))
    # Equal points are an equal share: one division and rounding per distinct value.
    shares = {p: round(100 * p / risk, 1) if risk else 0.0 for p in set(points.values())}
    contributions = [
        Contribution(
            item.finding_id,
            item.check_id,
            item.severity,
            max(item.exposure, 1),
            points[item.finding_id],
            shares[points[item.finding_id]],
            reasons[(item.severity, item.exposure)],
        )
        for item in counted
    ]
    score = shown_score(score_for(risk, k))
    grade = grade_for(score)
    ceiling = next(
        (GRADE_CAPS[s] for s in GRADE_CAPS if any(c.severity == s for c in counted)), None
    )
    if ceiling is not None and GRADES.index(ceiling) > GRADES.index(grade):
        grade = ceiling
    return ScoreResult(risk, score, grade, tuple(contributions), _cap(contributions))
