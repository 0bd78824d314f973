"""A tenant's score (0-100) and grade (A-F) from its findings (DESIGN §6).

PURE: takes ScoreItems, returns a ScoreResult; no ORM. The result is
- deterministic: items are applied in (severity, check id, finding id) order, whatever order
  they arrive in;
- explainable: 100 plus the contributions' points equals the score exactly;
- monotone: an extra open finding never raises the score or the grade;
- capped: an open critical finding makes the grade F, an open high one at most C.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

MAX_SCORE = 100
FLOOR = 0
# Points an OPEN finding takes off. One critical alone leaves 60 (D) and one high 80 (B): the
# caps below then make them F and C. Medium and low findings move the grade by score alone
# (two mediums leave 84, B; four leave 68, D).
CRITICAL_POINTS = 40
HIGH_POINTS = 20
MEDIUM_POINTS = 8
LOW_POINTS = 3
SEVERITY_POINTS = {
    "critical": CRITICAL_POINTS,
    "high": HIGH_POINTS,
    "medium": MEDIUM_POINTS,
    "low": LOW_POINTS,
}
SEVERITY_ORDER = ("critical", "high", "medium", "low")
STATUSES = ("open", "accepted", "resolved")
# Lowest score for each grade, best first; below the last threshold is F.
GRADE_THRESHOLDS = (("A", 90), ("B", 80), ("C", 70), ("D", 60))
GRADES = ("A", "B", "C", "D", "F")
# Best grade allowed while an open finding of the severity exists.
GRADE_CAPS = {"critical": "F", "high": "C"}


@dataclass(frozen=True)
class ScoreItem:
    finding_id: int | str
    check_id: str
    severity: str
    status: str  # "open", "accepted" or "resolved"
    title: str = ""


@dataclass(frozen=True)
class Contribution:
    finding_id: int | str
    check_id: str
    severity: str
    points: int  # zero or negative: what this finding did to the score
    reason: str


@dataclass(frozen=True)
class ScoreResult:
    score: int
    grade: str
    contributions: tuple[Contribution, ...]
    # The ceiling in force, in words naming the finding (None without an open critical or
    # high), whether or not the score alone already gave a lower grade.
    cap: str | None


def _order(item: ScoreItem) -> tuple[int, str, str]:
    return (SEVERITY_ORDER.index(item.severity), item.check_id, str(item.finding_id))


def _validate(item: ScoreItem) -> None:
    # A typo in a severity or status must not silently score as harmless.
    if item.severity not in SEVERITY_POINTS:
        raise ValueError(f"finding {item.finding_id}: unknown severity {item.severity!r}")
    if item.status not in STATUSES:
        raise ValueError(f"finding {item.finding_id}: unknown status {item.status!r}")


def _contribution(item: ScoreItem, remaining: int) -> Contribution:
    """What one item does when `remaining` points are left above the floor."""
    if item.status == "accepted":
        return Contribution(item.finding_id, item.check_id, item.severity, 0, "risk accepted")
    full = SEVERITY_POINTS[item.severity]
    taken = min(full, remaining)
    reason = f"open {item.severity} finding: -{full}"
    # Cut short at the floor so the contributions still add up to the score exactly.
    if taken == 0:
        reason += f", counted as 0: the score is already at the floor of {FLOOR}"
    elif taken < full:
        reason += f", truncated to -{taken} at the floor of {FLOOR}"
    return Contribution(item.finding_id, item.check_id, item.severity, -taken, reason)


def grade_for(score: int) -> str:
    for grade, minimum in GRADE_THRESHOLDS:
        if score >= minimum:
            return grade
    return "F"


def _cap(open_items: list[ScoreItem]) -> tuple[str | None, str | None]:
    """(best grade allowed, why) from the most severe open finding, first in order."""
    for severity, ceiling in GRADE_CAPS.items():
        for item in open_items:
            if item.severity == severity:
                label = f"{item.check_id} (finding {item.finding_id})"
                return ceiling, f"open {severity} finding {label} caps the grade at {ceiling}"
    return None, None


def score_findings(items: Iterable[ScoreItem]) -> ScoreResult:
    """Score one tenant's findings. Resolved findings are ignored; accepted ones are listed
    with 0 points; open ones subtract their severity's points, never below the floor."""
    given = list(items)
    for item in given:
        _validate(item)
    ordered = sorted(given, key=_order)
    score = MAX_SCORE
    contributions: list[Contribution] = []
    for item in ordered:
        if item.status == "resolved":
            continue
        contribution = _contribution(item, score - FLOOR)
        score += contribution.points
        contributions.append(contribution)
    open_items = [i for i in ordered if i.status == "open"]
    ceiling, cap = _cap(open_items)
    grade = grade_for(score)
    if ceiling is not None and GRADES.index(ceiling) > GRADES.index(grade):
        grade = ceiling
    return ScoreResult(score, grade, tuple(contributions), cap)
