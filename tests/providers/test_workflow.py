"""The provider assessment workflow with role checks at every step, versioning, expiry,
scoring with red flags, PROV-001 / PROV-002 on tenant posture, exports, uploads and hostile
text."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
import time_machine
from django.core.management import call_command
from django.utils import timezone

from posture.models import Finding
from posture.services import posture_evaluate
from providers.assessments import (
    AssessmentError,
    NotAllowed,
    answers_save,
    assessment_attest,
    assessment_review,
    assessment_start,
    assessment_submit,
    evidence_attach,
)
from providers.models import Assessment, Provider, Questionnaire
from providers.questionnaire_spec import QuestionnaireSpec, library_files, read_questionnaire_file
from providers.questionnaires import QuestionnaireConflict, questionnaire_load, spec_of
from tests.conftest import api_client, make_user

pytestmark = pytest.mark.django_db


def good_answer(question) -> dict:
    """The best answer to each question, with evidence where it is required."""
    if question.type == "choice":
        value = max(question.choices, key=lambda c: c.score).value
    elif question.type == "yes_no":
        value = "yes"
    elif question.type == "number":
        value = question.best
    else:
        value = "Described in the attached procedure."
    answer = {"value": value, "note": ""}
    if question.evidence == "required":
        answer["evidence_url"] = f"https://trust.nimbus.example/{question.id.lower()}.pdf"
    return answer


@pytest.fixture
def hosted(small_world, personas):
    """Provider nimbus hosts the small world's cluster (alpha and beta run there)."""
    call_command("load_questionnaires")
    provider = Provider.objects.create(slug="nimbus", name="Nimbus GPU Cloud")
    small_world.provider = provider
    small_world.save()
    return provider


def filled(provider, personas, overrides: dict | None = None) -> Assessment:
    user = personas["procurement"]
    assessment = assessment_start(provider=provider, user=user)
    spec = spec_of(assessment.questionnaire)
    answers = {q.id: good_answer(q) for q in spec.questions}
    for qid, value in (overrides or {}).items():
        answers[qid]["value"] = value
    result = answers_save(assessment=assessment, user=user, answers=answers)
    assert result.errors == {}
    assessment_attest(
        assessment=assessment,
        user=user,
        responder_name="Rosa Lind",
        responder_email="rosa@nimbus.example",
        responded_on=date(2026, 11, 20),
    )
    return assessment


def open_checks(check_id: str) -> set[str | None]:
    """The tenants the open findings of the check affect (None for one that affects none)."""
    rows = Finding.objects.filter(check_id=check_id, status="open").prefetch_related("tenants")
    return {t.slug for f in rows for t in f.tenants.all()} | {
        None for f in rows if not f.tenants.all()
    }


# --- the workflow and its roles ---------------------------------------------------------------


def test_procurement_fills_and_submits_security_accepts(hosted, personas):
    assessment = filled(hosted, personas)
    with pytest.raises(NotAllowed):  # procurement cannot accept
        assessment_review(assessment=assessment, user=personas["procurement"], accept=True)
    assessment_submit(assessment=assessment, user=personas["procurement"])
    with pytest.raises(NotAllowed):  # a security lead cannot fill in as procurement
        answers_save(assessment=assessment, user=personas["security_lead"], answers={})
    assessment_review(assessment=assessment, user=personas["security_lead"], accept=True)
    assessment.refresh_from_db()
    assert assessment.status == "accepted"
    assert assessment.expires_at - assessment.reviewed_at == timedelta(days=365)
    assert assessment.score == 100 and assessment.red_flags == []


def test_answers_cannot_change_once_submitted(hosted, personas):
    assessment = filled(hosted, personas)
    assessment_submit(assessment=assessment, user=personas["procurement"])
    with pytest.raises(AssessmentError, match="only a draft or one sent back"):
        answers_save(
            assessment=assessment,
            user=personas["procurement"],
            answers={"GPU-PART-01": {"value": "whole_gpu"}},
        )


def test_an_incomplete_assessment_cannot_be_submitted(hosted, personas):
    assessment = assessment_start(provider=hosted, user=personas["procurement"])
    with pytest.raises(AssessmentError) as refused:
        assessment_submit(assessment=assessment, user=personas["procurement"])
    assert "unanswered" in str(refused.value)
    assert "who at the provider answered" in str(refused.value)


def test_send_back_with_comments_then_resubmit(hosted, personas):
    assessment = filled(hosted, personas)
    assessment_submit(assessment=assessment, user=personas["procurement"])
    with pytest.raises(AssessmentError, match="what to fix"):
        assessment_review(assessment=assessment, user=personas["security_lead"], accept=False)
    assessment_review(
        assessment=assessment,
        user=personas["security_lead"],
        accept=False,
        answer_comments={"GPU-PATCH-01": "Attach the SLA clause, not the marketing page."},
    )
    assessment.refresh_from_db()
    assert assessment.status == "returned"
    assert assessment.answers.get(question_id="GPU-PATCH-01").review_comment.startswith("Attach")
    answers_save(
        assessment=assessment,
        user=personas["procurement"],
        answers={"GPU-PATCH-01": {"evidence_url": "https://trust.nimbus.example/msa-7.pdf"}},
    )
    assessment_submit(assessment=assessment, user=personas["procurement"])
    assert Assessment.objects.get(pk=assessment.pk).status == "submitted"


def test_the_submitter_never_reviews_their_own(hosted, personas):
    both = make_user("both", "procurement", "security_lead")
    assessment = filled(hosted, {"procurement": both})
    assessment_submit(assessment=assessment, user=both)
    with pytest.raises(NotAllowed, match="another security lead"):
        assessment_review(assessment=assessment, user=both, accept=True)


def test_invalid_answers_are_reported_and_the_rest_saved(hosted, personas):
    assessment = assessment_start(provider=hosted, user=personas["procurement"])
    result = answers_save(
        assessment=assessment,
        user=personas["procurement"],
        answers={
            "GPU-PART-01": {"value": "quantum"},
            "GPU-PATCH-01": {"value": "14"},
            "NOPE-01": {"value": "yes"},
            "GPU-IR-02": {"evidence_url": "javascript:x"},
        },
    )
    assert result.saved == ["GPU-PATCH-01"]
    assert set(result.errors) == {"GPU-PART-01", "NOPE-01", "GPU-IR-02"}
    assert assessment.answers.get(question_id="GPU-PATCH-01").value == 14


# --- versions -----------------------------------------------------------------------------------


def test_a_new_version_never_alters_answers_to_the_old_one(hosted, personas):
    assessment = filled(hosted, personas)
    v1 = assessment.questionnaire
    spec = read_questionnaire_file(library_files()[0])
    reworded = spec.questions[0].__class__(
        **{**spec.questions[0].__dict__, "text": "Reworded in version 2?"}
    )
    v2_spec = QuestionnaireSpec(
        **{**spec.__dict__, "version": 2, "questions": (reworded, *spec.questions[1:])}
    )
    v2 = questionnaire_load(spec=v2_spec).questionnaire
    assert (v1.version, v2.version) == (1, 2)
    assessment.refresh_from_db()
    assert assessment.questionnaire == v1
    assert spec_of(assessment.questionnaire).questions[0].text == spec.questions[0].text
    assert assessment.answers.count() == len(spec.questions)
    assert assessment_start(provider=hosted, user=personas["procurement"]).questionnaire == v2
    # The same version with other content is refused; the same content is a no-op.
    with pytest.raises(QuestionnaireConflict, match="needs a new version"):
        questionnaire_load(spec=QuestionnaireSpec(**{**v2_spec.__dict__, "title": "changed"}))
    assert questionnaire_load(spec=spec).created is False
    assert Questionnaire.objects.count() == 2


def test_load_questionnaires_refuses_a_bad_file(tmp_path):
    bad = tmp_path / "mine.yaml"
    bad.write_text("id: mine\nversion: 1\ntitle: x\ncategories: []\nquestions: []\nextra: 1\n")
    with pytest.raises(Exception, match="refused"):
        call_command("load_questionnaires", str(bad))
    assert not Questionnaire.objects.filter(slug="mine").exists()


# --- scoring, expiry and posture ----------------------------------------------------------------


def test_prov001_until_accepted_then_prov002_for_red_flags_on_every_tenant(hosted, personas):
    posture_evaluate()
    assert open_checks("PROV-001") == {"alpha", "beta"}
    evidence = Finding.objects.filter(check_id="PROV-001").first().evidence
    assert evidence["latest_status"] == "none started"

    assessment = filled(hosted, personas, {"GPU-PART-01": "time_slicing", "GPU-PATCH-01": 45})
    assessment_submit(assessment=assessment, user=personas["procurement"])
    assessment.refresh_from_db()
    assert [f["question"] for f in assessment.red_flags] == ["GPU-PART-01", "GPU-PATCH-01"]
    assert assessment.score < 100
    posture_evaluate()
    assert open_checks("PROV-001") == {"alpha", "beta"}  # submitted is not accepted

    assessment_review(assessment=assessment, user=personas["security_lead"], accept=True)
    posture_evaluate()
    assert open_checks("PROV-001") == set()
    flags = Finding.objects.filter(check_id="PROV-002", status="open")
    # One finding per red flag, affecting every tenant on the provider's cluster.
    assert {
        (tuple(f.tenants.order_by("slug").values_list("slug", flat=True)), f.evidence["question"])
        for f in flags
    } == {(("alpha", "beta"), "GPU-PART-01"), (("alpha", "beta"), "GPU-PATCH-01")}


def test_an_accepted_assessment_expires_after_a_year_with_a_reminder(hosted, personas, client):
    assessment = filled(hosted, personas)
    assessment_submit(assessment=assessment, user=personas["procurement"])
    assessment_review(assessment=assessment, user=personas["security_lead"], accept=True)
    client.force_login(personas["procurement"])
    assert b"renew soon" not in client.get("/providers/nimbus/").content
    with time_machine.travel(timezone.now() + timedelta(days=340)):
        client.force_login(personas["procurement"])  # sessions expire long before
        assert b"renew soon" in client.get("/providers/nimbus/").content
    with time_machine.travel(timezone.now() + timedelta(days=366)):
        client.force_login(personas["procurement"])
        posture_evaluate()
        assert open_checks("PROV-001") == {"alpha", "beta"}
        evidence = Finding.objects.filter(check_id="PROV-001", status="open").first().evidence
        assert evidence["last_acceptance_expired_at"]
        assert b"expired" in client.get("/providers/").content


# --- who sees what --------------------------------------------------------------------------------


def test_tenant_viewers_see_only_the_summary_of_their_providers(hosted, personas):
    assessment = filled(hosted, personas)
    viewer = api_client(personas["viewer_alpha"])
    listed = viewer.get("/api/v1/providers/").json()["results"]
    assert [p["slug"] for p in listed] == ["nimbus"]
    assert set(listed[0]) == {"id", "slug", "name", "standing"}  # no contacts, notes, clusters
    assert viewer.get(f"/api/v1/assessments/{assessment.pk}/").status_code == 404
    assert viewer.get("/api/v1/assessments/").json()["count"] == 0
    assert viewer.get("/api/v1/questionnaires/").json()["count"] == 0
    # A viewer whose tenant runs elsewhere sees no provider at all.
    outsider = make_user("viewer-gamma", "tenant_viewer")
    assert api_client(outsider).get("/api/v1/providers/").json()["count"] == 0
    assert api_client(outsider).get("/api/v1/providers/nimbus/").status_code == 404


def test_api_roles_at_every_step(hosted, personas):
    procurement, security = (
        api_client(personas["procurement"]),
        api_client(personas["security_lead"]),
    )
    assert security.post("/api/v1/assessments/", {"provider": "nimbus"}).status_code == 403
    created = procurement.post("/api/v1/assessments/", {"provider": "nimbus"}, format="json")
    assert created.status_code == 201, created.content
    pk = created.json()["id"]
    body = {"answers": {"GPU-PART-01": {"value": "mig_gi"}}}
    assert (
        security.patch(f"/api/v1/assessments/{pk}/answers/", body, format="json").status_code == 403
    )
    saved = procurement.patch(f"/api/v1/assessments/{pk}/answers/", body, format="json")
    assert saved.json() == {"saved": ["GPU-PART-01"], "errors": {}}
    refused = procurement.post(f"/api/v1/assessments/{pk}/submit/")
    assert refused.status_code == 400 and "unanswered" in refused.json()["detail"]
    review = {"decision": "accept"}
    assert procurement.post(f"/api/v1/assessments/{pk}/review/", review).status_code == 403
    assert security.post(f"/api/v1/assessments/{pk}/review/", review).status_code == 400  # draft
    assert api_client(personas["auditor"]).get(f"/api/v1/assessments/{pk}/").status_code == 200


# --- exports, import, uploads, hostile text -----------------------------------------------------


def test_csv_round_trip_and_formula_injection(hosted, personas):
    assessment = filled(hosted, personas)
    answers_save(
        assessment=assessment,
        user=personas["procurement"],
        answers={"GPU-PART-01": {"note": '=HYPERLINK("http://evil.example","click")'}},
    )
    client = api_client(personas["procurement"])
    csv_text = client.get(f"/api/v1/assessments/{assessment.pk}/export/?format=csv").content
    assert b"'=HYPERLINK" in csv_text
    assert b"\n=HYPERLINK" not in csv_text and b",=HYPERLINK" not in csv_text
    # Into a fresh assessment: the same answers come back, the note as it was typed.
    fresh = assessment_start(provider=hosted, user=personas["procurement"])
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile("answers.csv", csv_text, content_type="text/csv")
    imported = client.post(f"/api/v1/assessments/{fresh.pk}/import/", {"file": upload})
    assert imported.status_code == 200, imported.content
    copied = {a.question_id: (a.value, a.note, a.evidence_url) for a in fresh.answers.all()}
    original = {a.question_id: (a.value, a.note, a.evidence_url) for a in assessment.answers.all()}
    assert copied == original
    assert copied["GPU-PART-01"][1] == '=HYPERLINK("http://evil.example","click")'


def test_csv_import_lists_errors_per_row(hosted, personas):
    fresh = assessment_start(provider=hosted, user=personas["procurement"])
    from django.core.files.uploadedfile import SimpleUploadedFile

    text = (
        "question_id,answer\nGPU-PART-01,mig_gi\nGPU-PART-01,whole_gpu\nNOPE-9,yes\n"
        "GPU-PATCH-01,soon\n"
    )
    upload = SimpleUploadedFile("a.csv", text.encode(), content_type="text/csv")
    response = api_client(personas["procurement"]).post(
        f"/api/v1/assessments/{fresh.pk}/import/", {"file": upload}
    )
    assert response.status_code == 400
    body = response.json()
    assert body["saved"] == ["GPU-PART-01"]
    assert [e["row"] for e in body["errors"]] == [3, 4, 5]


def test_uploads_are_checked_stored_outside_static_and_served_to_readers_only(
    hosted, personas, settings, tmp_path, client
):
    settings.MEDIA_ROOT = str(tmp_path / "uploads")
    settings.GPUPOSTURE_MAX_UPLOAD_BYTES = 50_000
    assessment = assessment_start(provider=hosted, user=personas["procurement"])
    attach = dict(assessment=assessment, question_id="GPU-WIPE-02", user=personas["procurement"])
    with pytest.raises(ValueError, match="limit"):
        evidence_attach(
            **attach,
            name="big.pdf",
            content_type="application/pdf",
            data=b"%PDF-1.7\n" + b"x" * 60_000,
        )
    with pytest.raises(ValueError, match="markup"):
        evidence_attach(
            **attach,
            name="reset.pdf",
            content_type="application/pdf",
            data=b"<html><script>alert(1)</script></html>",
        )
    with pytest.raises(ValueError, match="its content is application/pdf"):
        evidence_attach(**attach, name="x.png", content_type="image/png", data=b"%PDF-1.7\n1")
    stored = evidence_attach(
        **attach,
        name="../../reset procedure.pdf",
        content_type="application/pdf",
        data=b"%PDF-1.7\nreset log\n",
    )
    assert stored.original_name == "reset procedure.pdf"
    assert stored.file.path.startswith(settings.MEDIA_ROOT)
    assert "static" not in stored.file.path
    url = f"/assessments/{assessment.pk}/evidence/{stored.pk}/"
    client.force_login(personas["security_lead"])
    response = client.get(url)
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == b"%PDF-1.7\nreset log\n"
    assert response["Content-Disposition"].startswith("attachment")
    assert response["X-Content-Type-Options"] == "nosniff"
    client.force_login(personas["viewer_alpha"])
    assert client.get(url).status_code == 404


def test_hostile_text_is_rendered_inert(hosted, personas, client):
    Provider.objects.filter(pk=hosted.pk).update(name="<script>alert('p')</script>")
    assessment = filled(hosted, personas)
    answers_save(
        assessment=assessment,
        user=personas["procurement"],
        answers={"GPU-PART-01": {"note": "<img src=x onerror=alert(1)>"}},
    )
    client.force_login(personas["security_lead"])
    for url in (
        f"/assessments/{assessment.pk}/",
        f"/assessments/{assessment.pk}/print/",
        "/providers/",
        "/providers/nimbus/",
    ):
        page = client.get(url).content
        assert b"<script>alert('p')" not in page, url
        assert b"<img src=x onerror" not in page, url
    assert (
        b"&lt;img src=x onerror=alert(1)&gt;"
        in client.get(f"/assessments/{assessment.pk}/print/").content
    )


# --- pages ----------------------------------------------------------------------------------------


def test_pages_walk_the_workflow(hosted, personas, client):
    client.force_login(personas["procurement"])
    started = client.post("/providers/nimbus/assessments/new/")
    assessment = Assessment.objects.get()
    assert started.url == f"/assessments/{assessment.pk}/"
    page = client.get(started.url)
    assert b'data-autosave="/api/v1/assessments/' in page.content
    assert b"GPU-PART-01" in page.content
    spec = spec_of(assessment.questionnaire)
    form = {
        "responder_name": "Rosa Lind",
        "responder_email": "rosa@nimbus.example",
        "responded_on": "2026-11-20",
        "then": "submit",
    }
    for q in spec.questions:
        for name, value in good_answer(q).items():
            form[f"{name}-{q.id}"] = value
    client.post(f"/assessments/{assessment.pk}/save/", form)
    assessment.refresh_from_db()
    assert assessment.status == "submitted"
    client.force_login(personas["security_lead"])
    review = client.get(f"/assessments/{assessment.pk}/")
    assert b'value="accept"' in review.content
    client.post(f"/assessments/{assessment.pk}/review/", {"decision": "accept"})
    assessment.refresh_from_db()
    assert assessment.status == "accepted"
    client.force_login(personas["procurement"])
    assert b'value="accept"' not in client.get(f"/assessments/{assessment.pk}/").content


def test_compare_page_shows_providers_side_by_side_and_flags_differences(hosted, personas, client):
    accepted = filled(hosted, personas, {"GPU-PART-01": "time_slicing"})
    assessment_submit(assessment=accepted, user=personas["procurement"])
    assessment_review(assessment=accepted, user=personas["security_lead"], accept=True)
    other = Provider.objects.create(slug="stratus", name="Stratus Compute")
    assessment_submit(assessment=filled(other, personas), user=personas["procurement"])
    client.force_login(personas["security_lead"])
    page = client.get("/providers/compare/?providers=nimbus&providers=stratus").content.decode()
    assert 'data-figure="radar-chart"' in page
    assert "Partitioning between customers" in page
    assert "differs" in page and "red flag" in page
    missing = client.get("/providers/compare/?providers=nimbus&providers=helio").content.decode()
    assert "helio has no accepted or submitted assessment" in missing
    client.force_login(personas["viewer_alpha"])
    assert client.get("/providers/compare/?providers=nimbus").status_code == 403


def test_provider_pages_for_a_tenant_viewer_are_a_summary(hosted, personas, client):
    hosted.notes = "Account manager: confidential pricing notes"
    hosted.save()
    filled(hosted, personas)
    client.force_login(personas["viewer_alpha"])
    page = client.get("/providers/nimbus/").content.decode()
    assert "Nimbus GPU Cloud" in page
    assert "confidential pricing" not in page and "Assessments" not in page
    assert "/assessments/" not in page


def test_procurement_registers_a_provider_with_contacts_and_it_is_audited(personas):
    from audit.models import AuditEvent

    client = api_client(personas["procurement"])
    contact = {"name": "Marta", "email": "marta@helio.example", "role": "security"}
    body = {
        "slug": "helio",
        "name": "Helio GPU",
        "website": "https://helio.example",
        "contacts": [contact],
    }
    created = client.post("/api/v1/providers/", body, format="json")
    assert created.status_code == 201, created.content
    assert created.json()["contacts"][0]["name"] == "Marta"
    changed = client.patch("/api/v1/providers/helio/", {"name": "Helio GPU Ltd"}, format="json")
    assert changed.status_code == 200
    events = AuditEvent.objects.filter(object_type="providers.provider").order_by("id")
    assert [(e.action, e.actor_name) for e in events] == [("create", "proc"), ("update", "proc")]
    assert events[1].before["name"] == "Helio GPU" and events[1].after["name"] == "Helio GPU Ltd"
    assert (
        api_client(personas["security_lead"])
        .post("/api/v1/providers/", {**body, "slug": "x"}, format="json")
        .status_code
        == 403
    )


def test_the_review_is_an_audit_event(hosted, personas):
    from audit.models import AuditEvent

    assessment = filled(hosted, personas)
    assessment_submit(assessment=assessment, user=personas["procurement"])
    assessment_review(
        assessment=assessment, user=personas["security_lead"], accept=True, comment="ok"
    )
    actions = list(
        AuditEvent.objects.filter(object_type="providers.assessment", object_id=str(assessment.pk))
        .order_by("id")
        .values_list("action", "actor_name")
    )
    assert actions == [
        ("create", "proc"),
        ("answer", "proc"),  # the answers filled in
        ("update", "proc"),  # the responder recorded
        ("submit", "proc"),
        ("accept", "sec"),
    ]
