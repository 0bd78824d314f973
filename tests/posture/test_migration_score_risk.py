"""Migration posture.0007 (with tenants.0005): stored scores gain risk points and are
re-expressed on the new curve, so a trend across the upgrade stays one line. Run with Django's
migration executor: back to the old shape, old-shape score rows, forward."""

from __future__ import annotations

import math

import pytest
from django.utils import timezone

from posture.models import TenantScore
from tenants.models import TrustClass
from tests.migration_steps import migrate, migrate_to_latest

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

BEFORE = [("posture", "0006_finding_tenant_drop"), ("tenants", "0004_sharing_requests")]
NOW = timezone.now()


@pytest.fixture
def old_world():
    apps = migrate(BEFORE)
    yield apps
    migrate_to_latest()


def _old_score(apps):
    """A sensitive tenant floored at 0 by the old score: one open critical spanning four
    workloads, one high "counted as 0" at the floor whose finding is gone since, one accepted."""
    TrustClass = apps.get_model("tenants", "TrustClass")
    Tenant = apps.get_model("tenants", "Tenant")
    Cluster = apps.get_model("inventory", "Cluster")
    Finding = apps.get_model("posture", "Finding")
    PostureRun = apps.get_model("posture", "PostureRun")
    TenantScore = apps.get_model("posture", "TenantScore")
    sensitive, _ = TrustClass.objects.get_or_create(slug="sensitive", defaults={"name": "S"})
    tenant = Tenant.objects.create(slug="clinical", name="Clinical", trust_class=sensitive)
    cluster = Cluster.objects.create(name="lab")
    common = {
        "cluster": cluster,
        "subject_kind": "Deployment",
        "subject_namespace": "ci",
        "first_seen": NOW,
        "last_seen": NOW,
        "title": "t",
    }
    critical = Finding.objects.create(
        check_id="POD-001",
        severity="critical",
        subject_name="trainer",
        exposure=4,
        fingerprint="a" * 64,
        **common,
    )
    accepted = Finding.objects.create(
        check_id="POD-004",
        severity="critical",
        subject_name="debug",
        status="accepted",
        fingerprint="b" * 64,
        **common,
    )
    contributions = [
        {
            "finding_id": critical.pk,
            "check": "POD-001",
            "severity": "critical",
            "points": -40,
            "reason": "open critical finding: -40",
        },
        {
            "finding_id": 99999,
            "check": "SHARE-002",
            "severity": "high",
            "points": 0,
            "reason": "open high finding: -20, counted as 0: the score is already at the floor "
            "of 0",
        },
        {
            "finding_id": accepted.pk,
            "check": "POD-004",
            "severity": "critical",
            "points": 0,
            "reason": "risk accepted",
        },
    ]
    return TenantScore.objects.create(
        run=PostureRun.objects.create(clusters=["lab"]),  # a run that judged a synced cluster
        tenant=tenant,
        computed_at=NOW,
        score=0,
        grade="F",
        cap="open critical finding POD-001 caps the grade at F",
        contributions=contributions,
    )


def test_old_scores_gain_risk_and_the_new_curve(old_world):
    old = _old_score(old_world)
    migrate_to_latest()
    assert TrustClass.objects.get(slug="sensitive").risk_weight == 10  # the documented default
    assert TrustClass.objects.get(slug="external").risk_weight == 1
    row = TenantScore.objects.get(pk=old.pk)
    # critical 40 x 10 x (1 + log2 4) = 1200; the high whose finding is gone: 15 x 10 x 1.
    assert row.risk == 1350
    assert row.score == math.floor(100 * math.exp(-1350 / 2500)) == 58
    assert row.grade == "F"  # the open critical still caps it
    assert [(c["check"], c["points"], c["share"]) for c in row.contributions] == [
        ("POD-001", 1200, 88.9),
        ("SHARE-002", 150, 11.1),
    ]
    assert row.computed_at == old.computed_at  # history keeps its dates
