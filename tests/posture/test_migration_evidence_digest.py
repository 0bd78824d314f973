"""Migration posture.0011: Finding.evidence_digest and PostureRun.actions_digest, forwards and
backwards over rows made before it. (The first score after it rewrites each old finding once
with its digest: tests/posture/test_rescore_cost.py.)"""

from __future__ import annotations

import pytest
from django.utils import timezone

from tests.migration_steps import migrate, migrate_to_latest

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

BEFORE = [("posture", "0010_finding_ticket_owner")]
AFTER = [("posture", "0011_finding_evidence_digest")]
NOW = timezone.now()


@pytest.fixture
def old_rows():
    apps = migrate(BEFORE)
    Cluster = apps.get_model("inventory", "Cluster")  # noqa: N806
    Finding = apps.get_model("posture", "Finding")  # noqa: N806
    PostureRun = apps.get_model("posture", "PostureRun")  # noqa: N806
    cluster = Cluster.objects.create(name="lab")
    finding = Finding.objects.create(
        check_id="POD-001",
        severity="critical",
        cluster=cluster,
        subject_kind="Deployment",
        subject_namespace="ci",
        subject_name="trainer",
        fingerprint="a" * 64,
        title="t",
        evidence={"replicas": 2, "pods": [{"pod": "ci/trainer-1"}]},
        first_seen=NOW,
        last_seen=NOW,
    )
    run = PostureRun.objects.create(counts={"actions": 1})
    yield finding.pk, run.pk
    migrate_to_latest()


def test_forwards_keeps_every_row_with_empty_digests_and_backwards_drops_only_them(old_rows):
    finding_id, run_id = old_rows
    apps = migrate(AFTER)
    finding = apps.get_model("posture", "Finding").objects.get(pk=finding_id)
    run = apps.get_model("posture", "PostureRun").objects.get(pk=run_id)
    assert finding.evidence_digest == "" and run.actions_digest == ""
    assert finding.evidence == {"replicas": 2, "pods": [{"pod": "ci/trainer-1"}]}
    assert run.counts == {"actions": 1}
    apps = migrate(BEFORE)
    finding = apps.get_model("posture", "Finding").objects.get(pk=finding_id)
    assert finding.evidence["replicas"] == 2 and finding.last_seen == NOW
    assert not hasattr(finding, "evidence_digest")
