"""A refused answer says which value it refused without sending it all back: a 1 MB value is
quoted by its first characters and its length, so the `errors` text stays readable."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from providers.models import Provider
from tests.conftest import api_client

pytestmark = pytest.mark.django_db

HUGE = "x" * 1_000_000


@pytest.mark.parametrize(
    ("question", "value", "says"),
    [
        ("GPU-PART-01", HUGE, "is not one of"),  # a choice
        ("GPU-PATCH-02", HUGE, "is not a number"),
        ("GPU-PATCH-02", 10**40, "is not a finite number"),
    ],
)
def test_a_refused_answer_quotes_its_value_cut_short(personas, question, value, says):
    call_command("load_questionnaires")
    Provider.objects.create(slug="nimbus", name="Nimbus GPU Cloud")
    client = api_client(personas["procurement"])
    pk = client.post("/api/v1/assessments/", {"provider": "nimbus"}, format="json").json()["id"]
    body = {"answers": {question: {"value": value}}}
    answer = client.post(f"/api/v1/assessments/{pk}/answers/", body, format="json")
    assert answer.status_code == 200
    error = answer.json()["errors"][question]
    assert says in error
    assert len(error) < 300, error[:300]
    if value is HUGE:
        assert "'xxxxxxxx" in error and "(1,000,002 characters)" in error
