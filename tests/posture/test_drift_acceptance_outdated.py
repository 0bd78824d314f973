"""An accepted drift finding (DRIFT-001..003, DRIFT-006) covers the changes it listed when its
risk was accepted (DESIGN §5): a change detected after the acceptance opens it again, with an
`outdated` audit event; syncs with no new change leave it accepted; an acceptance of unknown
time (accepted_at null) holds as before."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.test import Client

from audit.models import AuditEvent
from posture.models import Finding
from posture.rules.drift.changes import change_after
from posture.services import finding_accept, posture_evaluate
from tests.conftest import api_client
from tests.posture.test_drift_identity import config_findings, sync, world

T = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def accepted_config_finding(small_world, tmp_path, lead) -> Finding:
    """The time-slicing ConfigMap's drift finding (replicas 4 -> 8), accepted at T + 1 h."""
    with time_machine.travel(T, tick=False):
        sync(small_world, tmp_path, world(8), "v2.json")
    (finding,) = config_findings()
    with time_machine.travel(T + timedelta(hours=1), tick=False):
        finding_accept(
            finding=finding, user=lead, reason="planned: pool moved to 8", until=T + timedelta(30)
        )
    finding.refresh_from_db()
    assert (finding.status, finding.accepted_at) == ("accepted", T + timedelta(hours=1))
    return finding


@pytest.mark.django_db
def test_a_change_after_the_acceptance_opens_the_finding_with_an_audit_event(
    small_world, tmp_path, personas
):
    finding = accepted_config_finding(small_world, tmp_path, personas["security_lead"])
    with time_machine.travel(T + timedelta(days=2), tick=False):
        sync(small_world, tmp_path, world(2), "v3.json")  # unplanned: 8 -> 2
        (again,) = config_findings()
        assert (again.pk, again.status) == (finding.pk, "open")
        assert again.evidence["change_count"] == 2
        event = AuditEvent.objects.filter(object_id=str(finding.pk), action="outdated").get()
        assert event.actor_name == "system"
        assert event.before["status"] == "accepted" and event.after["status"] == "open"
        assert event.after["reopened"] == "a change after the acceptance"
        assert event.after["change"]["detected_at"] == again.evidence["changes"][0]["detected_at"]
        assert again.reopened_note.startswith("reopened: a change after the acceptance")
        body = api_client(personas["security_lead"]).get(f"/api/v1/findings/{again.pk}/").json()
        assert body["status"] == "open"
        assert body["reopened"].startswith("reopened: a change after the acceptance")
        browser = Client()
        browser.force_login(personas["security_lead"])
        page = browser.get(f"/findings/{again.pk}/")
        assert b"reopened: a change after the acceptance" in page.content


@pytest.mark.django_db
def test_syncs_with_no_new_change_leave_the_acceptance(small_world, tmp_path, personas):
    finding = accepted_config_finding(small_world, tmp_path, personas["security_lead"])
    for day in (1, 2):
        with time_machine.travel(T + timedelta(days=day), tick=False):
            sync(small_world, tmp_path, world(8), f"same-{day}.json")
            posture_evaluate()
    finding.refresh_from_db()
    assert finding.status == "accepted"
    assert finding.reopened_note == ""
    assert not AuditEvent.objects.filter(action="outdated").exists()


@pytest.mark.django_db
def test_an_acceptance_of_unknown_time_holds_through_a_later_change(
    small_world, tmp_path, personas
):
    finding = accepted_config_finding(small_world, tmp_path, personas["security_lead"])
    Finding.objects.filter(pk=finding.pk).update(accepted_at=None)  # made before it was kept
    with time_machine.travel(T + timedelta(days=2), tick=False):
        sync(small_world, tmp_path, world(2), "v3.json")
    (again,) = config_findings()
    assert again.status == "accepted"
    assert again.evidence["change_count"] == 2
    assert not AuditEvent.objects.filter(action="outdated").exists()


@pytest.mark.parametrize(
    ("check_id", "evidence", "since", "newer"),
    [
        ("DRIFT-003", {"changes": [{"detected_at": "2026-03-02T00:00:00+00:00"}]}, T, True),
        ("DRIFT-003", {"changes": [{"detected_at": "2026-03-01T12:00:00+00:00"}]}, T, False),
        ("DRIFT-003", {"changes": [{"detected_at": "2026-03-02T00:00:00+00:00"}]}, None, False),
        ("DRIFT-004", {"changes": [{"detected_at": "2026-03-02T00:00:00+00:00"}]}, T, False),
        ("DRIFT-001", {"changes": []}, T, False),
        ("DRIFT-001", {"changes": [{"detected_at": "not a time"}]}, T, False),
        ("DRIFT-006", "not a mapping", T, False),
    ],
)
def test_change_after(check_id, evidence, since, newer):
    assert (change_after(check_id, evidence, since) is not None) is newer
