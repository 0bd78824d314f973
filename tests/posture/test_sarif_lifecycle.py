"""A SARIF export with every status: a resolved finding is a passing result (no alert in a
code-scanning tool), an accepted one is suppressed, an open one fails."""

from __future__ import annotations

import json
from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.utils import timezone
from sarif_pydantic import Sarif

from posture.models import CheckExemption, Finding
from posture.services import posture_evaluate
from tests.conftest import api_client, content

pytestmark = pytest.mark.django_db

SARIF_SCHEMA = Path(__file__).resolve().parents[2] / "var" / "schemas" / "sarif-2.1.0-rtm.5.json"


def _world_with_every_status(cluster, personas) -> tuple[Finding, Finding]:
    """POD-001 on inference-0 fixed (an exemption resolves it), another finding accepted."""
    CheckExemption.objects.create(
        check_id="POD-001",
        namespace="beta-prod",
        name="inference-0",
        reason="vendor-supported profiling agent, reviewed 2026-11",
    )
    posture_evaluate()
    resolved = Finding.objects.get(cluster=cluster, check_id="POD-001", subject_name="inference-0")
    assert resolved.status == "resolved"
    accepted = Finding.objects.filter(cluster=cluster, status="open").order_by("pk").first()
    assert accepted is not None
    until = (timezone.now() + timedelta(days=30)).date().isoformat()
    answer = api_client(personas["security_lead"]).post(
        f"/api/v1/findings/{accepted.pk}/accept/",
        {"reason": "shared on purpose until the split, ticket 42", "until": until},
        format="json",
    )
    assert answer.status_code == 200, answer.content
    return resolved, accepted


def _by_finding(document: dict) -> dict[int, dict]:
    return {int(r["properties"]["findingId"]): r for r in document["runs"][0]["results"]}


def _assert_lifecycle(document: dict, resolved: Finding, accepted: Finding) -> None:
    Sarif.model_validate(document)
    results = _by_finding(document)
    fixed = results[resolved.pk]
    assert (fixed["kind"], fixed["level"], fixed["baselineState"]) == ("pass", "none", "absent")
    assert "suppressions" not in fixed
    kept = results[accepted.pk]
    assert kept["suppressions"][0]["status"] == "accepted" and "kind" not in kept
    assert kept["level"] in ("error", "warning", "note")
    still_open = [r for pk, r in results.items() if pk not in (resolved.pk, accepted.pk)]
    assert still_open and all("kind" not in r and r["level"] != "none" for r in still_open)
    assert all(r["properties"]["status"] == "open" for r in still_open)


def test_the_sarif_export_presents_a_resolved_finding_as_passing(small_world, personas):
    resolved, accepted = _world_with_every_status(small_world, personas)
    out = StringIO()
    call_command("export_findings", format="sarif", cluster="lab", stdout=out, stderr=StringIO())
    _assert_lifecycle(json.loads(out.getvalue()), resolved, accepted)

    lead = api_client(personas["security_lead"])
    answer = lead.get("/api/v1/findings/export/?format=sarif&cluster=lab")
    document = json.loads(content(answer))
    _assert_lifecycle(document, resolved, accepted)
    if SARIF_SCHEMA.exists():  # fetched by `make install`
        import jsonschema

        validator = jsonschema.Draft4Validator(json.loads(SARIF_SCHEMA.read_text()))
        assert not list(validator.iter_errors(document))
