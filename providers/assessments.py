"""Writes for provider assessments: procurement fills and submits; a security lead reviews.

Roles are enforced here, so the pages, the API and the CSV import cannot forget them:
procurement cannot accept, a security lead cannot fill as procurement, and whoever submitted
an assessment does not review it. Every step is an audit event, and so is every save that
changes answers (`answer`: per question, each changed field before and after).
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

from django.conf import settings
from django.core.files.base import ContentFile
from django.db import transaction
from django.utils import timezone

from audit.services import CREATE, UPDATE, audit_record, model_to_audit_dict
from gpuposture.base.echo import echoed
from gpuposture.base.rescore import rescore_request
from gpuposture.base.roles import EDIT_PROVIDERS, REVIEW_ASSESSMENTS, may
from providers.models import Answer, Assessment, EvidenceFile, Provider, Questionnaire
from providers.questionnaire_spec import QuestionSpec
from providers.questionnaires import latest_questionnaire, spec_of
from providers.scoring import AnswerError, AnswerValue, ScoreResult, coerce_answer, score_assessment
from providers.uploads import check_upload

ASSESSMENT_FIELDS = (
    "provider",
    "questionnaire",
    "status",
    "responder_name",
    "responder_email",
    "responded_on",
    "submitted_by",
    "submitted_at",
    "reviewed_by",
    "reviewed_at",
    "review_comment",
    "expires_at",
    "score",
)


class AssessmentError(ValueError):
    """Refused; the message says why in words a person can act on."""


class NotAllowed(AssessmentError):
    """The user's role does not allow this step."""


@dataclass
class SaveResult:
    saved: list[str] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)  # question id -> why refused


def _require(user, action: tuple[str, ...], what: str) -> None:
    if not may(user, action):
        raise NotAllowed(f"Only {' or '.join(r.replace('_', ' ') for r in action)} may {what}.")


def _editable(assessment: Assessment) -> None:
    if not assessment.editable:
        raise AssessmentError(
            f"The assessment is {assessment.get_status_display().lower()}; only a draft or one "
            "sent back can be changed."
        )


def _snapshot(assessment: Assessment) -> dict[str, Any]:
    return model_to_audit_dict(assessment, fields=ASSESSMENT_FIELDS)


@transaction.atomic
def assessment_start(
    *, provider: Provider, user, questionnaire: Questionnaire | None = None
) -> Assessment:
    _require(user, EDIT_PROVIDERS, "start an assessment")
    questionnaire = questionnaire or latest_questionnaire()
    if questionnaire is None:
        raise AssessmentError("No questionnaire is loaded: run `manage.py load_questionnaires`.")
    assessment = Assessment.objects.create(
        provider=provider, questionnaire=questionnaire, created_by=user
    )
    audit_record(actor=user, action=CREATE, obj=assessment, after=_snapshot(assessment))
    return assessment


def _question(assessment: Assessment, question_id: str) -> QuestionSpec:
    question = spec_of(assessment.questionnaire).question(question_id)
    if question is None:
        raise AnswerError(f"no question {question_id!r} in {assessment.questionnaire}")
    return question


@transaction.atomic
def answers_save(*, assessment: Assessment, user, answers: dict[str, dict[str, Any]]) -> SaveResult:
    """Save answers by question id ({"value", "note", "evidence_url"}, each optional). Valid
    ones are saved, each refusal is reported by question: an autosave never loses the rest."""
    _require(user, EDIT_PROVIDERS, "fill in answers")
    _editable(assessment)
    result = SaveResult()
    # Read under this transaction's write lock, never from a prefetch made before it: the
    # API's assessment comes with its answers prefetched, and an autosave racing the page's
    # Save would otherwise insert an answer the other had just stored (a 500, IntegrityError).
    existing = {a.question_id: a for a in Answer.objects.filter(assessment=assessment)}
    before: dict[str, dict[str, Any]] = {}
    after: dict[str, dict[str, Any]] = {}
    for question_id, fields in answers.items():
        try:
            question = _question(assessment, question_id)
            changes = _answer_changes(question, fields)
        except AnswerError as exc:
            result.errors[question_id] = str(exc)
            continue
        answer = existing.get(question_id) or Answer(assessment=assessment, question_id=question_id)
        # The page posts every question: only answers that really change count as saved, so
        # "3 answer(s) saved" means three, and untouched blanks create no rows.
        if not _differs(answer, changes):
            continue
        changed = {n: v for n, v in changes.items() if getattr(answer, n) != v}
        before[question_id] = {name: _old(answer, name) for name in changed}
        after[question_id] = changed
        for name, value in changes.items():
            setattr(answer, name, value)
        answer.updated_by = user
        answer.save()
        result.saved.append(question_id)
    if result.saved:
        Assessment.objects.filter(pk=assessment.pk).update(updated_at=timezone.now())
        # One event per save: which answers changed, each field before and after.
        audit_record(actor=user, action="answer", obj=assessment, before=before, after=after)
    return result


def _old(answer: Answer, name: str) -> Any:
    """A field as it was; an answer not yet stored had none (None, not the empty default)."""
    return getattr(answer, name) if answer.pk is not None else None


def _differs(answer: Answer, changes: dict[str, Any]) -> bool:
    if answer.pk is None:
        return any(value not in (None, "") for value in changes.values())
    return any(getattr(answer, name) != value for name, value in changes.items())


def _answer_changes(question: QuestionSpec, fields: dict[str, Any]) -> dict[str, Any]:
    changes: dict[str, Any] = {}
    if "value" in fields:
        changes["value"] = coerce_answer(question, fields["value"])
    for name, limit in (("note", 4000), ("evidence_url", 500)):
        if name in fields:
            text = str(fields[name] or "").strip()
            if len(text) > limit:
                raise AnswerError(f"{name} is longer than {limit} characters")
            if name == "evidence_url" and text and not text.startswith(("https://", "http://")):
                raise AnswerError("an evidence link must be an http(s) URL")
            changes[name] = text
    return changes


@transaction.atomic
def assessment_attest(
    *, assessment: Assessment, user, responder_name: str, responder_email: str, responded_on: date
) -> Assessment:
    """Who at the provider gave the answers, and when: the answers are theirs, in writing."""
    _require(user, EDIT_PROVIDERS, "record the responder")
    _editable(assessment)
    before = _snapshot(assessment)
    assessment.responder_name = responder_name.strip()[:120]
    assessment.responder_email = responder_email.strip()[:254]
    assessment.responded_on = responded_on
    assessment.save(update_fields=["responder_name", "responder_email", "responded_on"])
    after = _snapshot(assessment)
    if after != before:
        audit_record(actor=user, action=UPDATE, obj=assessment, before=before, after=after)
    return assessment


@transaction.atomic
def evidence_attach(
    *, assessment: Assessment, question_id: str, user, name: str, content_type: str, data: bytes
) -> EvidenceFile:
    _require(user, EDIT_PROVIDERS, "attach evidence")
    _editable(assessment)
    _question(assessment, question_id)
    checked = check_upload(
        name, content_type, data[:4096], len(data), settings.GPUPOSTURE_MAX_UPLOAD_BYTES
    )
    answer, _ = Answer.objects.get_or_create(assessment=assessment, question_id=question_id)
    stored = EvidenceFile(
        answer=answer,
        original_name=checked.display_name,
        content_type=checked.content_type,
        size=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
        uploaded_by=user,
    )
    # Our own name on disk: the uploaded one is only shown, never used as a path.
    stored.file.save(f"{uuid.uuid4().hex}{checked.extension}", ContentFile(data), save=False)
    stored.save()
    audit_record(
        actor=user,
        action="attach",
        obj=stored,
        after={"question": question_id, "name": stored.original_name, "sha256": stored.sha256},
    )
    return stored


@transaction.atomic
def evidence_remove(*, evidence: EvidenceFile, user) -> None:
    """Take a file off an answer (a wrong upload, a superseded report); the audit event keeps
    its name and hash, and the stored bytes go with it."""
    _require(user, EDIT_PROVIDERS, "remove evidence")
    assessment = evidence.answer.assessment
    _editable(assessment)
    before = {
        "question": evidence.answer.question_id,
        "name": evidence.original_name,
        "sha256": evidence.sha256,
        "size": evidence.size,
    }
    pk, label = evidence.pk, str(evidence)
    stored = evidence.file
    evidence.delete()
    # The bytes go only once the row is gone for good: a rolled-back delete keeps its file.
    transaction.on_commit(lambda: stored.storage.delete(stored.name))
    audit_record(
        actor=user,
        action="detach",
        object_type="providers.evidencefile",
        object_id=pk,
        object_repr=label,
        before=before,
        after=None,
    )


def assessment_score(assessment: Assessment) -> ScoreResult:
    answers = list(assessment.answers.all().prefetch_related("files"))
    with_evidence = {a.question_id for a in answers if a.evidence_url or a.files.all()}
    return score_assessment(
        spec_of(assessment.questionnaire),
        [AnswerValue(a.question_id, a.value) for a in answers],
        with_evidence=with_evidence,
    )


def _first(ids: list[str] | tuple[str, ...], shown: int = 10) -> str:
    """The first `shown` ids, then how many more: a cut list must not read as the whole."""
    more = len(ids) - shown
    return ", ".join(ids[:shown]) + (f" and {more} more" if more > 0 else "")


def submission_problems(assessment: Assessment, result: ScoreResult) -> list[str]:
    problems = []
    if result.unanswered:
        n = len(result.unanswered)
        problems.append(
            f"{n} question{'' if n == 1 else 's'} unanswered: " + _first(result.unanswered)
        )
    if result.evidence_missing:
        problems.append("evidence required but missing for: " + _first(result.evidence_missing))
    if not assessment.responder_name or not assessment.responded_on:
        problems.append("record who at the provider answered, and when (the written attestation)")
    return problems


def _store_score(assessment: Assessment, result: ScoreResult) -> None:
    assessment.score = None if result.overall is None else round(result.overall, 1)
    assessment.red_flags = [
        {
            "question": f.question_id,
            "category": f.category,
            "text": f.text,
            "answer": f.answer,
            "reason": f.reason,
        }
        for f in result.red_flags
    ]
    assessment.category_scores = {
        c.id: None if c.score is None else round(c.score, 1) for c in result.categories
    }


@transaction.atomic
def assessment_submit(*, assessment: Assessment, user) -> Assessment:
    _require(user, EDIT_PROVIDERS, "submit an assessment")
    _editable(assessment)
    result = assessment_score(assessment)
    problems = submission_problems(assessment, result)
    if problems:
        raise AssessmentError("Not ready to submit: " + "; ".join(problems) + ".")
    before = _snapshot(assessment)
    _store_score(assessment, result)
    assessment.status = Assessment.Status.SUBMITTED
    assessment.submitted_by = user
    assessment.submitted_at = timezone.now()
    assessment.save()
    audit_record(
        actor=user, action="submit", obj=assessment, before=before, after=_snapshot(assessment)
    )
    return assessment


@transaction.atomic
def assessment_review(
    *,
    assessment: Assessment,
    user,
    accept: bool,
    comment: str = "",
    answer_comments: dict[str, str] | None = None,
) -> Assessment:
    """Accept (valid for GPUPOSTURE_ASSESSMENT_VALID_DAYS) or send back with comments."""
    _require(user, REVIEW_ASSESSMENTS, "review an assessment")
    if assessment.status != Assessment.Status.SUBMITTED:
        raise AssessmentError("Only a submitted assessment can be reviewed.")
    if assessment.submitted_by_id == user.pk:
        raise NotAllowed("You submitted this assessment; another security lead must review it.")
    if not accept and not (comment.strip() or any((answer_comments or {}).values())):
        raise AssessmentError("Say what to fix when sending an assessment back.")
    spec = spec_of(assessment.questionnaire)
    unknown = [q for q in answer_comments or {} if spec.question(q) is None]
    if unknown:
        # A comment on no question would be dropped unread: refuse the review instead.
        raise AssessmentError(
            f"answer_comments name no question of {spec.id} v{spec.version}: "
            + _first([echoed(q, 42) for q in unknown])
            + "; nothing was changed."
        )
    before = _snapshot(assessment)
    for answer in assessment.answers.filter(question_id__in=list(answer_comments or {})):
        answer.review_comment = (answer_comments or {})[answer.question_id].strip()[:2000]
        answer.save(update_fields=["review_comment"])
    now = timezone.now()
    _store_score(assessment, assessment_score(assessment))
    assessment.status = Assessment.Status.ACCEPTED if accept else Assessment.Status.RETURNED
    assessment.reviewed_by = user
    assessment.reviewed_at = now
    assessment.review_comment = comment.strip()[:4000]
    assessment.expires_at = (
        now + timedelta(days=settings.GPUPOSTURE_ASSESSMENT_VALID_DAYS) if accept else None
    )
    assessment.save()
    audit_record(
        actor=user,
        action="accept" if accept else "send_back",
        obj=assessment,
        before=before,
        after={**_snapshot(assessment), "answer_comments": answer_comments or {}},
    )
    # PROV- findings of the clusters this provider hosts read the accepted questionnaire.
    rescore_request(providers=[assessment.provider_id], reason="questionnaire")
    return assessment
