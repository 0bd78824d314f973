"""A review names what it refuses: a comment on a question the questionnaire does not have
(it had been dropped silently), and a decision that is neither accept nor send_back
(rtprocure k48b, k09)."""

from __future__ import annotations

import pytest

from providers.assessments import assessment_submit
from providers.models import Assessment
from tests.conftest import api_client
from tests.providers.test_workflow import filled, hosted  # noqa: F401  # a fixture

pytestmark = pytest.mark.django_db


def _submitted(hosted, personas) -> Assessment:  # noqa: F811
    assessment = filled(hosted, personas)
    return assessment_submit(assessment=assessment, user=personas["procurement"])


def test_a_comment_on_an_unknown_question_is_refused_and_nothing_changes(hosted, personas):  # noqa: F811
    assessment = _submitted(hosted, personas)
    body = {
        "decision": "send_back",
        "answer_comments": {"GPU-PATCH-01": "Attach the records.", "GPU-NOPE-99": "Hm."},
    }
    response = api_client(personas["security_lead"]).post(
        f"/api/v1/assessments/{assessment.pk}/review/", body, format="json"
    )
    assert response.status_code == 400
    assert "'GPU-NOPE-99'" in response.json()["detail"]
    assert "GPU-PATCH-01" not in response.json()["detail"]
    assessment.refresh_from_db()
    assert assessment.status == Assessment.Status.SUBMITTED
    assert assessment.answers.get(question_id="GPU-PATCH-01").review_comment == ""


def test_an_unknown_decision_names_the_accepted_ones(hosted, personas):  # noqa: F811
    assessment = _submitted(hosted, personas)
    response = api_client(personas["security_lead"]).post(
        f"/api/v1/assessments/{assessment.pk}/review/", {"decision": "maybe"}, format="json"
    )
    assert response.status_code == 400
    assert response.json()["errors"]["decision"] == [
        '"maybe" is not a decision: one of accept, send_back'
    ]
