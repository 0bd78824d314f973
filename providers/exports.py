"""An assessment out as CSV / JSON downloads, and answers back in from the CSV: the database
side of providers.exchange (which does the formats, pure)."""

from __future__ import annotations

import json
from typing import Any

from django.core.files.uploadedfile import UploadedFile
from django.http import HttpResponse

from providers.assessments import AssessmentError, answers_save, assessment_score
from providers.exchange import AnswerRow, assessment_csv, assessment_json, parse_answers_csv
from providers.models import Assessment
from providers.questionnaires import spec_of

MAX_CSV_BYTES = 2_000_000


def answer_rows(assessment: Assessment) -> dict[str, AnswerRow]:
    return {
        a.question_id: AnswerRow(
            question_id=a.question_id,
            value=a.value,
            note=a.note,
            evidence_url=a.evidence_url,
            review_comment=a.review_comment,
            evidence_files=tuple(f.original_name for f in a.files.all()),
        )
        for a in assessment.answers.all().prefetch_related("files")
    }


def assessment_meta(assessment: Assessment) -> dict[str, Any]:
    def iso(value: Any) -> str | None:
        return value.isoformat() if value else None

    return {
        "provider": {"slug": assessment.provider.slug, "name": assessment.provider.name},
        "assessment": assessment.pk,
        "status": assessment.status,
        "responder": {
            "name": assessment.responder_name,
            "email": assessment.responder_email,
            "answered_on": iso(assessment.responded_on),
        },
        "submitted_at": iso(assessment.submitted_at),
        "reviewed_at": iso(assessment.reviewed_at),
        "reviewed_by": assessment.reviewed_by.get_username() if assessment.reviewed_by else None,
        "review_comment": assessment.review_comment,
        "expires_at": iso(assessment.expires_at),
    }


def _filename(assessment: Assessment, extension: str) -> str:
    version = assessment.questionnaire.version
    return f"{assessment.provider.slug}-assessment-{assessment.pk}-v{version}.{extension}"


def assessment_export(assessment: Assessment, fmt: str) -> HttpResponse:
    spec = spec_of(assessment.questionnaire)
    rows = answer_rows(assessment)
    result = assessment_score(assessment)
    if fmt == "csv":
        body, content_type = assessment_csv(spec, rows, result), "text/csv; charset=utf-8"
    else:
        document = assessment_json(spec, rows, result, assessment_meta(assessment))
        body, content_type = json.dumps(document, indent=2), "application/json"
    response = HttpResponse(body, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{_filename(assessment, fmt)}"'
    return response


def import_answers_csv(*, assessment: Assessment, user, upload: UploadedFile) -> dict[str, Any]:
    """Save the valid rows of an answers CSV; every refused row is listed with its number."""
    if upload.size and upload.size > MAX_CSV_BYTES:
        raise AssessmentError(f"the CSV is over {MAX_CSV_BYTES:,} bytes")
    parsed = parse_answers_csv(upload.read(MAX_CSV_BYTES + 1), spec_of(assessment.questionnaire))
    errors = [
        {"row": e.row, "question_id": e.question_id, "message": e.message} for e in parsed.errors
    ]
    saved: list[str] = []
    if parsed.answers:
        result = answers_save(assessment=assessment, user=user, answers=parsed.answers)
        saved = result.saved
        errors += [{"row": None, "question_id": q, "message": m} for q, m in result.errors.items()]
    return {"rows_read": parsed.rows_read, "saved": saved, "errors": errors}
