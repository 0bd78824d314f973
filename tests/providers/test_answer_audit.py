"""Every change of a questionnaire's answers is an audit event (DESIGN §10), from the API, the
CSV import and the page: one event per save, per question each changed field before and after
(rtprocure k55)."""

from __future__ import annotations

import io

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command

from audit.models import AuditEvent
from providers.assessments import answers_save
from providers.models import Assessment
from tests.conftest import api_client
from tests.providers.test_workflow import hosted  # noqa: F401  # a fixture

pytestmark = pytest.mark.django_db


def _draft(personas) -> tuple[object, int]:
    client = api_client(personas["procurement"])
    pk = client.post("/api/v1/assessments/", {"provider": "nimbus"}, format="json").json()["id"]
    return client, pk


def _answer_events(pk: int) -> list[AuditEvent]:
    rows = AuditEvent.objects.filter(
        object_type="providers.assessment", object_id=str(pk), action="answer"
    )
    return list(rows.order_by("id"))


def test_each_api_save_that_changes_answers_is_one_audit_event(hosted, personas):  # noqa: F811
    client, pk = _draft(personas)
    url = f"/api/v1/assessments/{pk}/answers/"
    first = {"GPU-PATCH-01": {"value": 7, "note": ""}, "GPU-PART-02": {"value": "yes"}}
    client.post(url, {"answers": first}, format="json")
    client.post(
        url, {"answers": {"GPU-PATCH-01": {"value": 45, "note": "slower now"}}}, format="json"
    )
    client.post(url, {"answers": {"GPU-PATCH-01": {"value": 45}}}, format="json")  # no change
    events = _answer_events(pk)
    assert len(events) == 2
    assert events[0].actor_name == "proc"
    assert events[0].before == {"GPU-PATCH-01": {"value": None}, "GPU-PART-02": {"value": None}}
    assert events[0].after == {"GPU-PATCH-01": {"value": 7.0}, "GPU-PART-02": {"value": "yes"}}
    assert events[1].before == {"GPU-PATCH-01": {"value": 7.0, "note": ""}}
    assert events[1].after == {"GPU-PATCH-01": {"value": 45.0, "note": "slower now"}}
    out = io.StringIO()
    call_command("verify_audit_log", stdout=out)  # raises on a broken chain


def test_a_csv_import_and_a_page_save_are_audit_events(hosted, personas, client):  # noqa: F811
    api, pk = _draft(personas)
    upload = SimpleUploadedFile("a.csv", b"question_id,answer\nGPU-PATCH-01,12\n")
    assert api.post(f"/api/v1/assessments/{pk}/import/", {"file": upload}).status_code == 200
    client.force_login(personas["procurement"])
    client.post(f"/assessments/{pk}/save/", {"value-GPU-PATCH-01": "9"})
    events = _answer_events(pk)
    assert [(e.before, e.after) for e in events] == [
        ({"GPU-PATCH-01": {"value": None}}, {"GPU-PATCH-01": {"value": 12.0}}),
        ({"GPU-PATCH-01": {"value": 12.0}}, {"GPU-PATCH-01": {"value": 9.0}}),
    ]


def test_recording_the_responder_is_an_audit_event(hosted, personas):  # noqa: F811
    client, pk = _draft(personas)
    body = {
        "answers": {},
        "responder_name": "Ada at Nimbus",
        "responder_email": "ada@nimbus.example",
        "responded_on": "2026-11-02",
    }
    client.post(f"/api/v1/assessments/{pk}/answers/", body, format="json")
    event = AuditEvent.objects.get(
        object_type="providers.assessment", object_id=str(pk), action="update"
    )
    assert (event.before["responder_name"], event.after["responder_name"]) == ("", "Ada at Nimbus")


def test_answers_save_keeps_the_errors_contract_for_a_negative_value(hosted, personas):  # noqa: F811
    _, pk = _draft(personas)
    result = answers_save(
        assessment=Assessment.objects.get(pk=pk),
        user=personas["procurement"],
        answers={"GPU-PATCH-03": {"value": -1}},
    )
    assert result.saved == [] and list(result.errors) == ["GPU-PATCH-03"]
    assert _answer_events(pk) == []


def test_a_save_racing_another_never_trusts_answers_read_before_its_lock(hosted, personas):  # noqa: F811
    """The API's assessment comes with its answers prefetched, read before the save takes the
    write lock; the page's Save storing the same question in between made the autosave insert
    it again: a 500 (IntegrityError) in the procurement browser run. The save now reads the
    answers under its own lock and updates the one just stored."""
    _, pk = _draft(personas)
    stale = Assessment.objects.prefetch_related("answers").get(pk=pk)
    assert list(stale.answers.all()) == []  # the prefetch: no answer yet
    user = personas["procurement"]
    answers_save(
        assessment=Assessment.objects.get(pk=pk), user=user, answers={"GPU-PATCH-01": {"value": 7}}
    )
    result = answers_save(assessment=stale, user=user, answers={"GPU-PATCH-01": {"value": 9}})
    assert result.saved == ["GPU-PATCH-01"] and not result.errors
    assert Assessment.objects.get(pk=pk).answers.get(question_id="GPU-PATCH-01").value == 9
