"""Procurement filling a draft: a provisional standing instead of a score, Save counting what it
really saved, evidence files removed (audited), upload errors naming question and file, and
files whose bytes do not match their name refused."""

from __future__ import annotations

import os
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command

from audit.models import AuditEvent
from providers.assessments import answers_save, assessment_start, evidence_attach
from providers.models import Assessment, EvidenceFile, Provider
from providers.questionnaires import spec_of
from providers.uploads import UploadRefused, check_upload
from tests.providers.test_workflow import good_answer

pytestmark = pytest.mark.django_db

PDF = b"%PDF-1.7\nreset log\n"


@pytest.fixture
def draft(personas, settings, tmp_path) -> Assessment:
    settings.MEDIA_ROOT = str(tmp_path / "uploads")
    call_command("load_questionnaires")
    provider = Provider.objects.create(slug="nimbus", name="Nimbus GPU Cloud")
    return assessment_start(provider=provider, user=personas["procurement"])


def _messages(response) -> list[str]:
    return [str(m) for m in response.context["messages"]]


@pytest.mark.parametrize(
    ("name", "data", "why"),
    [
        ("report.pdf", b"just some text, not a PDF\n", "ends .pdf but the content is text"),
        ("photo.png", PDF, "ends .png but the content is a PDF"),
        ("scan.jpg", b"\x89PNG\r\n\x1a\n....", "ends .jpg but the content is a PNG image"),
        ("notes.txt", PDF, "ends .txt but the content is a PDF"),
        ("tool.exe", b"plain words\n", "files ending .exe are not accepted"),
    ],
)
def test_a_file_whose_content_does_not_match_its_name_is_refused(name, data, why):
    with pytest.raises(UploadRefused, match=re.escape(why)):
        check_upload(name, "application/octet-stream", data, len(data), 10_000)


@pytest.mark.parametrize(
    ("name", "data", "kind"),
    [
        ("report.PDF", PDF, "application/pdf"),
        ("scan.jpeg", b"\xff\xd8\xff\xe0....", "image/jpeg"),
        ("answers.csv", b"a,b\n1,2\n", "text/plain"),
        ("answers.json", b'{"a": 1}\n', "text/plain"),
        ("no-ending", PDF, "application/pdf"),
    ],
)
def test_files_whose_content_matches_their_name_are_accepted(name, data, kind):
    assert check_upload(name, "", data, len(data), 10_000).content_type == kind


def test_a_draft_shows_a_provisional_standing_not_a_score(draft, personas, client):
    spec = spec_of(draft.questionnaire)
    answers_save(
        assessment=draft,
        user=personas["procurement"],
        answers={q.id: good_answer(q) for q in spec.questions[:3]},
    )
    answered = draft.answers.exclude(value=None).count()
    assert answered == 3
    client.force_login(personas["procurement"])
    page = client.get(f"/assessments/{draft.pk}/").content.decode()
    assert f"provisional, {answered} of {len(spec.questions)} answered" in page
    assert not re.search(r"Score\s+\d+/100", page)
    listed = client.get("/providers/nimbus/").content.decode()
    assert "provisional" in listed


def test_save_reports_the_number_actually_saved(draft, personas, client):
    spec = spec_of(draft.questionnaire)
    client.force_login(personas["procurement"])
    # The page posts every question; only two of them carry something new.
    form = {f"note-{q.id}": "" for q in spec.questions}
    form[f"note-{spec.questions[0].id}"] = "Asked their CISO on the call."
    form[f"note-{spec.questions[1].id}"] = "Same for the second."
    response = client.post(f"/assessments/{draft.pk}/save/", form, follow=True)
    assert "2 answer(s) saved." in _messages(response)
    assert draft.answers.count() == 2
    again = client.post(f"/assessments/{draft.pk}/save/", form, follow=True)
    assert "No changes to save: every answer was already saved." in _messages(again)


def test_an_upload_error_names_the_question_and_the_file_and_keeps_the_rest(
    draft, personas, client
):
    spec = spec_of(draft.questionnaire)
    good, bad = spec.questions[0].id, spec.questions[1].id
    client.force_login(personas["procurement"])
    response = client.post(
        f"/assessments/{draft.pk}/save/",
        {
            f"note-{good}": "See the attached procedure.",
            f"file-{good}": SimpleUploadedFile("procedure.pdf", PDF, "application/pdf"),
            f"file-{bad}": SimpleUploadedFile("fake.pdf", b"not a pdf\n", "application/pdf"),
        },
        follow=True,
    )
    shown = _messages(response)
    refused = [m for m in shown if bad in m and "'fake.pdf'" in m]
    assert refused and "the content is text, not a PDF" in refused[0], shown
    assert "1 answer(s) saved, 1 file(s) attached." in shown
    assert EvidenceFile.objects.get().original_name == "procedure.pdf"
    assert draft.answers.get(question_id=good).note == "See the attached procedure."


def test_an_evidence_file_can_be_removed_and_it_is_audited(
    draft, personas, client, django_capture_on_commit_callbacks
):
    question = spec_of(draft.questionnaire).questions[0].id
    stored = evidence_attach(
        assessment=draft,
        question_id=question,
        user=personas["procurement"],
        name="old report.pdf",
        content_type="application/pdf",
        data=PDF,
    )
    path = stored.file.path
    url = f"/assessments/{draft.pk}/evidence/{stored.pk}/remove/"
    client.force_login(personas["procurement"])
    page = client.get(f"/assessments/{draft.pk}/").content.decode()
    assert f'action="{url}"' in page
    # Readers may download evidence but not remove it.
    client.force_login(personas["security_lead"])
    assert client.post(url).status_code == 403
    assert EvidenceFile.objects.filter(pk=stored.pk).exists()
    client.force_login(personas["procurement"])
    assert os.path.exists(path)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url, follow=True)
    assert f"{question}: file 'old report.pdf' removed." in _messages(response)
    assert not EvidenceFile.objects.filter(pk=stored.pk).exists()
    event = AuditEvent.objects.get(action="detach")
    assert event.object_repr == "old report.pdf"
    assert event.before["sha256"] == stored.sha256
    assert event.actor_name == personas["procurement"].get_username()
    assert not os.path.exists(path)  # the stored bytes went with it


def test_evidence_cannot_be_removed_once_submitted(draft, personas, client):
    question = spec_of(draft.questionnaire).questions[0].id
    stored = evidence_attach(
        assessment=draft,
        question_id=question,
        user=personas["procurement"],
        name="report.pdf",
        content_type="application/pdf",
        data=PDF,
    )
    Assessment.objects.filter(pk=draft.pk).update(status=Assessment.Status.SUBMITTED)
    client.force_login(personas["procurement"])
    client.post(f"/assessments/{draft.pk}/evidence/{stored.pk}/remove/")
    assert EvidenceFile.objects.filter(pk=stored.pk).exists()


def test_the_answered_on_date_survives_a_second_save(draft, personas, client):
    """The en-gb locale once rendered 20/11/2026 into the date input, which a browser shows as
    empty: the next Save then cleared the attestation's date."""
    client.force_login(personas["procurement"])
    form = {"responder_name": "Rosa Lind", "responded_on": "2026-11-20"}
    client.post(f"/assessments/{draft.pk}/save/", form)
    page = client.get(f"/assessments/{draft.pk}/").content.decode()
    assert 'value="2026-11-20"' in page
    client.post(f"/assessments/{draft.pk}/save/", {**form, "responded_on": "2026-11-20"})
    draft.refresh_from_db()
    assert str(draft.responded_on) == "2026-11-20"
