"""A number a provider cannot mean (a negative patch window, -500 days, had scored like 7 days)
is refused as a per-question error on every path: the API, the CSV import and the page (rtprocure
k15)."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from providers.models import Answer
from tests.conftest import api_client
from tests.providers.test_workflow import hosted  # noqa: F401  # a fixture

pytestmark = pytest.mark.django_db


def _draft(personas) -> tuple[object, int]:
    client = api_client(personas["procurement"])
    pk = client.post("/api/v1/assessments/", {"provider": "nimbus"}, format="json").json()["id"]
    return client, pk


@pytest.mark.parametrize("value", [-5, -500, "-500", -0.01])
def test_the_api_refuses_a_negative_patch_window_and_keeps_the_rest(hosted, personas, value):  # noqa: F811
    client, pk = _draft(personas)
    body = {"answers": {"GPU-PATCH-01": {"value": value}, "GPU-PART-02": {"value": "yes"}}}
    response = client.post(f"/api/v1/assessments/{pk}/answers/", body, format="json")
    assert response.status_code == 200
    assert response.json()["saved"] == ["GPU-PART-02"]
    assert "a number of days cannot be negative" in response.json()["errors"]["GPU-PATCH-01"]
    assert not Answer.objects.filter(assessment_id=pk, question_id="GPU-PATCH-01").exists()


def test_a_negative_answer_never_replaces_a_stored_one(hosted, personas):  # noqa: F811
    client, pk = _draft(personas)
    url = f"/api/v1/assessments/{pk}/answers/"
    client.post(url, {"answers": {"GPU-PATCH-01": {"value": 7}}}, format="json")
    response = client.post(url, {"answers": {"GPU-PATCH-01": {"value": -500}}}, format="json")
    assert response.json()["saved"] == [] and "GPU-PATCH-01" in response.json()["errors"]
    assert Answer.objects.get(assessment_id=pk, question_id="GPU-PATCH-01").value == 7.0


def test_the_csv_import_refuses_a_negative_number_of_hours(hosted, personas):  # noqa: F811
    client, pk = _draft(personas)
    text = "question_id,answer\nGPU-IR-01,-24\nGPU-PART-02,yes\n"
    upload = SimpleUploadedFile("a.csv", text.encode(), content_type="text/csv")
    response = client.post(f"/api/v1/assessments/{pk}/import/", {"file": upload})
    assert response.status_code == 400
    body = response.json()
    assert body["saved"] == ["GPU-PART-02"]
    assert [(e["row"], e["question_id"]) for e in body["errors"]] == [(2, "GPU-IR-01")]
    assert "hours cannot be negative" in body["errors"][0]["message"]
    assert not Answer.objects.filter(assessment_id=pk, question_id="GPU-IR-01").exists()


def test_the_page_refuses_a_negative_patch_window(hosted, personas, client):  # noqa: F811
    _, pk = _draft(personas)
    client.force_login(personas["procurement"])
    response = client.post(
        f"/assessments/{pk}/save/",
        {"value-GPU-PATCH-01": "-500", "value-GPU-PART-02": "yes"},
        follow=True,
    )
    shown = [str(m) for m in response.context["messages"]]
    assert any("GPU-PATCH-01" in m and "cannot be negative" in m for m in shown), shown
    stored = set(Answer.objects.filter(assessment_id=pk).values_list("question_id", flat=True))
    assert stored == {"GPU-PART-02"}
