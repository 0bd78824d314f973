"""What a re-score rewrites: nothing when nothing changed (findings keep their rows, the
fix-first actions are not regrouped), and exactly what changed otherwise (issue 18, speed)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from posture.action_store import actions_refresh
from posture.finding_digests import evidence_digest
from posture.models import Action, Finding, PostureRun
from posture.services import finding_accept, posture_evaluate
from tenants.models import TrustClass

pytestmark = pytest.mark.django_db


def actions_state() -> dict[str, tuple]:
    return {
        a.key: (a.pk, a.computed_at, a.risk_removed, tuple(a.finding_ids))
        for a in Action.objects.all()
    }


def test_a_rescore_with_nothing_changed_rewrites_no_finding_and_keeps_the_actions(small_world):
    before = actions_state()
    assert before, "the small world has actions to keep"
    findings = {f.pk: (f.evidence_digest, f.last_seen) for f in Finding.objects.all()}
    assert all(digest for digest, _ in findings.values())
    with CaptureQueriesContext(connection) as queries:
        run = posture_evaluate()
    assert run.counts["actions_regrouped"] is False
    assert actions_state() == before  # same rows, same computed_at: not rewritten
    writes = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("UPDATE")]
    assert not any('"evidence"' in sql for sql in writes), writes  # no finding rewritten
    assert not [
        q
        for q in queries.captured_queries
        if 'DELETE FROM "posture_action' in q["sql"] or 'INSERT INTO "posture_action' in q["sql"]
    ]
    # Every finding was still seen: last_seen moved, nothing else.
    for finding in Finding.objects.filter(status="open"):
        assert finding.last_seen > findings[finding.pk][1]
        assert finding.evidence_digest == findings[finding.pk][0]


def test_an_acceptance_regroups_the_actions(small_world, personas):
    finding = Finding.objects.get(check_id="POD-001", subject_name="inference-0")
    holding = [a for a in Action.objects.all() if finding.pk in a.finding_ids]
    assert holding
    finding_accept(
        finding=finding,
        user=personas["security_lead"],
        reason="debug build, removed Friday",
        until=timezone.now() + timedelta(days=7),
    )
    run = posture_evaluate()
    assert run.counts["actions_regrouped"] is True
    assert not [a for a in Action.objects.all() if finding.pk in a.finding_ids]


def test_a_class_weight_change_regroups_the_actions(small_world):
    risk_before = sum(Action.objects.values_list("risk_removed", flat=True))
    TrustClass.objects.filter(slug="external").update(risk_weight=9.5)
    run = posture_evaluate()
    assert run.counts["actions_regrouped"] is True
    assert sum(Action.objects.values_list("risk_removed", flat=True)) > risk_before


def test_lost_actions_are_regrouped_even_with_the_same_digest(small_world):
    count = Action.objects.count()
    Action.objects.all().delete()
    run = posture_evaluate()
    assert run.counts["actions_regrouped"] is True and Action.objects.count() == count


def test_a_finding_without_its_digest_is_rewritten_once(small_world):
    """What a database migrated from before the digest holds: "" never matches a draft, so the
    finding is rewritten with its digest; its evidence is what the actions were grouped from,
    so they are kept."""
    finding = Finding.objects.filter(status="open").first()
    digest = finding.evidence_digest
    Finding.objects.filter(pk=finding.pk).update(evidence_digest="")
    run = posture_evaluate()
    finding.refresh_from_db()
    assert finding.evidence_digest == digest == evidence_digest(finding.evidence)
    assert run.counts["actions_regrouped"] is False


def test_changed_evidence_regroups_the_actions(small_world):
    run = PostureRun.objects.order_by("id").last()
    finding = Finding.objects.filter(status="open").first()
    Finding.objects.filter(pk=finding.pk).update(
        evidence={"changed": True}, evidence_digest=evidence_digest({"changed": True})
    )
    now = timezone.now()
    kept = actions_refresh(
        now=now, previous=run.actions_digest, previous_count=run.counts["actions"]
    )
    assert kept.rebuilt is True and kept.digest != run.actions_digest
    assert set(Action.objects.values_list("computed_at", flat=True)) == {now}


def test_the_run_stores_the_digest_it_grouped_from(small_world):
    first = PostureRun.objects.order_by("id").last()
    again = posture_evaluate()
    assert first.actions_digest and again.actions_digest == first.actions_digest


def test_the_evidence_digest_is_of_the_evidence_as_stored():
    # A tuple reads back as a list and key order is not kept: the same evidence either way.
    assert evidence_digest({"b": (1, 2), "a": "x"}) == evidence_digest({"a": "x", "b": [1, 2]})
    assert evidence_digest({"a": 1}) != evidence_digest({"a": 2})
    assert evidence_digest({1: "x", "a": "y"})  # keys of mixed types still digest
