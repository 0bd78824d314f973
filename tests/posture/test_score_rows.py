"""What a score stores, as the pages and the API read it back: each tenant's contributions as
the scoring computed them (issue 18, speed: the rows are built from named tuples and written by
one encoder, and must read back exactly as before)."""

from __future__ import annotations

import json

import pytest

from posture import scoring
from posture.action_store import _subject_pools
from posture.models import Action, Finding, FindingTenant, TenantScore
from posture.scoring import ScoreItem, score_findings

pytestmark = pytest.mark.django_db


def test_a_bad_item_among_many_valid_ones_is_still_named():
    items = [ScoreItem(n, "POD-001", "high", "open") for n in range(2000)]
    items.insert(1500, ScoreItem("f-bad", "POD-001", "severe", "open"))
    with pytest.raises(ValueError, match="finding f-bad: unknown severity 'severe'"):
        score_findings(items)
    items[1500] = ScoreItem("f-odd", "POD-001", "high", "closed")
    with pytest.raises(ValueError, match="finding f-odd: unknown status 'closed'"):
        score_findings(items)


def test_each_stored_contribution_is_the_scores_own(small_world):
    stored = TenantScore.objects.order_by("-id").select_related("tenant__trust_class")
    checked = 0
    for row in stored[:10]:
        ids = FindingTenant.objects.filter(
            tenant=row.tenant, finding__status__in=("open", "accepted")
        ).values_list("finding_id", flat=True)
        findings = Finding.objects.filter(pk__in=list(ids))
        items = [
            ScoreItem(f.pk, f.check_id, f.severity, f.status, f.title, f.exposure) for f in findings
        ]
        result = score_findings(items, class_weight=row.tenant.trust_class.risk_weight)
        assert (row.risk, row.score, row.grade) == (result.risk, result.score, result.grade)
        expected = [
            {
                "finding_id": c.finding_id,
                "check": c.check_id,
                "severity": c.severity,
                "exposure": c.exposure,
                "points": c.points,
                "share": c.share,
                "reason": c.reason,
            }
            for c in result.contributions
        ]
        assert row.contributions == expected
        # every key, whatever order the backend keeps (PostgreSQL's jsonb sorts them)
        assert all(set(c) == set(expected[0]) for c in row.contributions)
        checked += bool(expected)
    assert checked, "the small world has tenants with open findings"


def test_stored_action_id_lists_read_back_as_lists(small_world):
    for action in Action.objects.all():
        assert isinstance(action.finding_ids, list) and action.finding_ids
        assert action.finding_count == len(action.finding_ids)
        assert action.check_ids == sorted(set(action.check_ids))
    assert json.loads(json.dumps([1, 2])) == [1, 2]


POOLS = {("c1", "n1"): "a100", ("c1", "n2"): "h100", ("c1", "n3"): ""}


@pytest.mark.parametrize(
    ("kind", "name", "evidence", "expected"),
    [
        ("Node", "n1", {}, (("a100",), False)),
        ("Node", "n3", {}, ((), False)),  # a node in no pool: no pool, and no pod outside one
        ("Deployment", "w", {"pods": [{"node": "n2"}, {"node": "n1"}]}, (("a100", "h100"), False)),
        ("Deployment", "w", {"pods": [{"node": "n1"}, {"node": "n3"}]}, (("a100",), True)),
        ("Deployment", "w", {"pods": [{"node": "n1"}, {"node": None}, "x"]}, (("a100",), False)),
        ("Deployment", "w", {"pods": [{"node": "gone"}]}, ((), True)),  # not a known node
        ("Deployment", "w", {"nodes": ["n1"]}, ((), False)),  # no pods listed
        ("Deployment", "w", ["not", "a", "dict"], ((), False)),
    ],
)
def test_the_pools_of_a_subject(kind, name, evidence, expected):
    assert _subject_pools(POOLS, "c1", kind, name, evidence) == expected


def test_contribution_fields_in_the_stored_order():
    from posture.services import CONTRIBUTION_KEYS

    result = score_findings([ScoreItem(1, "POD-001", "high", "open")], class_weight=2)
    assert dict(zip(CONTRIBUTION_KEYS, result.contributions[0], strict=True)) == {
        "finding_id": 1,
        "check": "POD-001",
        "severity": "high",
        "exposure": 1,
        "points": scoring.finding_risk(severity="high", exposure=1, class_weight=2),
        "share": 100.0,
        "reason": "open high 15 x class weight 2",
    }
