"""posture.scoring: risk points that rank, a score with no floor (DESIGN §6).

Deterministic, explainable (contributions add up to the risk), monotone, capped.
"""

from __future__ import annotations

import itertools
import math
import random

import pytest

from posture.scoring import (
    GRADES,
    MAX_SCORE,
    SEVERITY_WEIGHTS,
    K,
    ScoreItem,
    exposure_factor,
    finding_risk,
    finding_risk_per_tenant,
    grade_for,
    score_findings,
    score_for,
    shown_score,
)


def item(
    n: int | str, severity: str, status: str = "open", check: str = "POD-001", exposure: int = 1
) -> ScoreItem:
    return ScoreItem(n, check, severity, status, f"finding {n}", exposure)


def _adds_up(result) -> bool:
    return round(sum(c.points for c in result.contributions), 2) == result.risk


def test_no_findings_is_a_perfect_a_with_no_risk():
    result = score_findings([], class_weight=5)
    assert (result.risk, result.score, result.grade, result.contributions, result.cap) == (
        0,
        100,
        "A",
        (),
        None,
    )


def test_documented_weights():
    assert SEVERITY_WEIGHTS == {"critical": 40, "high": 15, "medium": 5, "low": 1}
    assert K == 2500


@pytest.mark.parametrize(
    ("severity", "class_weight", "exposure", "points"),
    [
        ("critical", 1, 1, 40),
        ("critical", 10, 1, 400),
        ("high", 2, 1, 30),
        ("medium", 1, 8, 20),  # 5 x (1 + log2 8 = 4)
        ("low", 1, 0, 1),  # an exposure under 1 counts as 1
        ("high", 1, 12, 68.77),  # 15 x (1 + 3.585): twelve replicas, not twelve times
    ],
)
def test_a_findings_risk_points(severity, class_weight, exposure, points):
    assert finding_risk(severity=severity, exposure=exposure, class_weight=class_weight) == points


def test_exposure_has_diminishing_returns():
    factors = [exposure_factor(n) for n in range(1, 65)]
    assert factors[0] == 1 and factors[1] == 2 and factors[63] == 7
    gains = [b - a for a, b in itertools.pairwise(factors)]
    assert all(g > 0 for g in gains) and gains == sorted(gains, reverse=True)


def test_risk_per_affected_tenant_follows_each_tenants_class():
    risks = finding_risk_per_tenant(
        severity="critical", exposure=4, class_weights={"clinical": 10, "research": 1}
    )
    assert risks == {"clinical": 1200, "research": 120}


@pytest.mark.parametrize(
    ("score", "grade"),
    [
        (100, "A"),
        (90, "A"),
        (89.9, "B"),
        (80, "B"),
        (79, "C"),
        (70, "C"),
        (60, "D"),
        (59.9, "F"),
        (0.1, "F"),
    ],
)
def test_grade_bands(score, grade):
    assert grade_for(score) == grade


def test_no_floor_score_is_positive_and_strictly_decreasing():
    risks = [0, 0.5, 1, 10, 100, 1_000, 5_000, 10_000, 25_000, 50_000, 100_000, 1_000_000]
    raw = [score_for(r) for r in risks]
    assert raw[0] == 100
    assert all(s > 0 for s in raw)
    assert all(a > b for a, b in itertools.pairwise(raw))
    shown = [shown_score(s) for s in raw]
    assert all(s > 0 for s in shown)  # a finite risk never shows 0
    assert all(a >= b for a, b in itertools.pairwise(shown))
    assert all(s < 100 for s in shown[1:])  # any risk shows below 100


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        (100.0, 100),
        (99.97, 99),
        (10.4, 10),
        (9.87, 9.8),
        (0.15, 0.1),
        (0.0347, 0.1),  # one decimal, never 0: below 0.1 shows 0.1
        (0.000123, 0.1),
        (4e-08, 0.1),
    ],
)
def test_shown_score_whole_from_10_one_decimal_below_never_zero(raw, shown):
    assert shown_score(raw) == shown


def test_score_is_100_exp_minus_risk_over_k():
    result = score_findings([item(1, "critical", exposure=2)], class_weight=10)
    assert result.risk == 800
    assert result.score == math.floor(100 * math.exp(-800 / K))


def test_open_findings_count_accepted_and_resolved_count_zero():
    result = score_findings(
        [item(1, "high"), item(2, "critical", "accepted"), item(3, "critical", "resolved")]
    )
    assert result.risk == 15
    assert [c.finding_id for c in result.contributions] == [1]
    assert result.contributions[0].share == 100


def test_contributions_largest_first_with_their_share():
    result = score_findings(
        [item(1, "low"), item(2, "high", exposure=4), item(3, "critical"), item(4, "medium")],
        class_weight=2,
    )
    assert [(c.finding_id, c.points, c.share) for c in result.contributions] == [
        (2, 90, 49.5),
        (3, 80, 44.0),
        (4, 10, 5.5),
        (1, 2, 1.1),
    ]
    assert result.risk == 182 and _adds_up(result)
    assert result.contributions[0].reason == "open high 15 x class weight 2 x exposure 4 " + (
        "(1 + log2 4 = 3.00)"
    )


def test_caps_critical_at_f_high_at_c():
    # One low-class critical: score 98 (A by score alone), capped at F, the finding named.
    critical = score_findings([item(7, "critical", check="POD-004")])
    assert critical.score == 98 and critical.grade == "F"
    assert critical.cap == "open critical finding POD-004 (finding 7) caps the grade at F"
    high = score_findings([item(8, "high"), item(9, "medium")])
    assert high.score >= 90 and high.grade == "C"
    assert high.cap is not None and "caps the grade at C" in high.cap
    accepted = score_findings([item(7, "critical", "accepted")])
    assert (accepted.grade, accepted.cap) == ("A", None)  # an accepted risk does not cap


def test_unknown_severity_or_status_is_an_error():
    with pytest.raises(ValueError, match="severity"):
        score_findings([item(1, "dire")])
    with pytest.raises(ValueError, match="status"):
        score_findings([item(1, "high", "snoozed")])


def _worlds(n: int) -> list[list[tuple[str, str, int]]]:
    rng = random.Random(18)
    kinds = [(s, st) for s in SEVERITY_WEIGHTS for st in ("open", "accepted", "resolved")]
    return [
        [(*rng.choice(kinds), rng.randint(0, 40)) for _ in range(rng.randint(0, 30))]
        for _ in range(n * 40)
    ]


def _items(kinds: list[tuple[str, str, int]]) -> list[ScoreItem]:
    return [item(i, s, st, f"CHK-{i % 7:03d}", e) for i, (s, st, e) in enumerate(kinds)]


def test_deterministic_whatever_the_order():
    rng = random.Random(6)
    for kinds in _worlds(2):
        items = _items(kinds)
        expected = score_findings(items, class_weight=3)
        for _ in range(3):
            shuffled = items[:]
            rng.shuffle(shuffled)
            assert score_findings(shuffled, class_weight=3) == expected


def test_monotone_an_extra_open_finding_never_lowers_risk_or_raises_score():
    for kinds in _worlds(3):
        base = score_findings(_items(kinds), class_weight=2)
        for severity in SEVERITY_WEIGHTS:
            extra = score_findings(
                [*_items(kinds), item("extra", severity, exposure=3)], class_weight=2
            )
            assert extra.risk > base.risk
            assert extra.score <= base.score
            assert GRADES.index(extra.grade) >= GRADES.index(base.grade)


def test_contributions_always_add_up_and_only_open_ones_count():
    for kinds in _worlds(5):
        result = score_findings(_items(kinds), class_weight=1.5)
        assert _adds_up(result)
        assert all(c.points > 0 for c in result.contributions)
        assert len(result.contributions) == sum(st == "open" for _s, st, _e in kinds)
        assert 0 < result.score <= MAX_SCORE
        points = [c.points for c in result.contributions]
        assert points == sorted(points, reverse=True)


def test_different_findings_give_different_risk_where_the_old_floor_tied_them():
    # Under the floor both were 0 / F; now the second, with one more high, has more risk.
    many = [item(i, "critical") for i in range(5)]
    worse = score_findings([*many, item(99, "high")], class_weight=10)
    bad = score_findings(many, class_weight=10)
    assert worse.risk > bad.risk and worse.score < bad.score
    assert bad.score > 0
