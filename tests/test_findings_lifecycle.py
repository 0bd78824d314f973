"""Risk acceptance (security leads only, reason and expiry), its expiry, exports, the check
catalogue and exemptions."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import time_machine
from django.test import Client
from django.utils import timezone
from sarif_pydantic import Sarif

from posture.exports import findings_csv, spreadsheet_safe
from posture.models import CheckExemption, Finding, TenantScore
from posture.services import posture_evaluate
from tests.conftest import api_client, content

pytestmark = pytest.mark.django_db


def privileged(cluster) -> Finding:
    return Finding.objects.get(cluster=cluster, check_id="POD-001", subject_name="inference-0")


def test_a_security_lead_accepts_a_risk_until_it_expires(small_world, personas):
    finding = privileged(small_world)
    until = (timezone.now() + timedelta(days=30)).isoformat()
    body = {"reason": "vendor driver debug, removed by next sprint", "until": until}
    for persona in ("platform_engineer", "auditor", "viewer_beta"):
        response = api_client(personas[persona]).post(
            f"/api/v1/findings/{finding.pk}/accept/", body
        )
        assert response.status_code in (403, 404), persona
    response = api_client(personas["security_lead"]).post(
        f"/api/v1/findings/{finding.pk}/accept/", body, format="json"
    )
    assert response.status_code == 200 and response.json()["status"] == "accepted"
    posture_evaluate()
    finding.refresh_from_db()
    assert finding.status == "accepted"  # still firing, still accepted
    score = TenantScore.objects.filter(tenant__slug="beta").latest("computed_at", "id")
    # An accepted risk counts 0: it is not among the contributions, and the risk is less.
    assert finding.pk not in {c["finding_id"] for c in score.contributions}
    before = TenantScore.objects.filter(tenant__slug="beta").order_by("computed_at", "id")[0]
    assert finding.pk in {c["finding_id"] for c in before.contributions}
    assert score.risk < before.risk
    with time_machine.travel(timezone.now() + timedelta(days=31), tick=False):
        posture_evaluate()
    finding.refresh_from_db()
    assert finding.status == "open"  # the acceptance expired: open again


@pytest.mark.parametrize(
    "reason, days, message",
    [
        ("short", 30, "reason"),
        ("a good long reason", -1, "expiry"),
        ("a good long reason", 400, "expiry"),
    ],
)
def test_acceptance_needs_a_reason_and_a_near_expiry(small_world, personas, reason, days, message):
    finding = privileged(small_world)
    until = (timezone.now() + timedelta(days=days)).isoformat()
    response = api_client(personas["security_lead"]).post(
        f"/api/v1/findings/{finding.pk}/accept/", {"reason": reason, "until": until}, format="json"
    )
    assert response.status_code == 400 and message in response.json()["detail"]
    finding.refresh_from_db()
    assert finding.status == "open"


@pytest.mark.parametrize("until", ["2027-02-30", "2027-13-01", "2027-02-30T12:00:00Z"])
def test_api_acceptance_of_a_day_no_calendar_has_is_a_400_naming_it(small_world, personas, until):
    finding = privileged(small_world)
    lead = api_client(personas["security_lead"])
    with time_machine.travel(NOW, tick=False):
        response = lead.post(
            f"/api/v1/findings/{finding.pk}/accept/",
            {"reason": "accepted while the fix rolls out", "until": until},
            format="json",
        )
    assert response.status_code == 400
    assert response.json()["detail"] == f"`until` {until!r} is not a day of the calendar"
    finding.refresh_from_db()
    assert finding.status == "open"


NOW = datetime(2026, 12, 5, 21, 40, tzinfo=UTC)


@pytest.mark.parametrize(
    "until, stored",
    [
        # A day, as the page takes it: to the end of that day, UTC (it stored 00:00).
        ("2026-12-06", "2026-12-06T23:59:59Z"),
        # A date-time: its date in UTC is taken (01:00 at +02:00 on the 7th is the 6th, UTC).
        ("2026-12-07T01:00:00+02:00", "2026-12-06T23:59:59Z"),
        ("2027-01-04T08:00:00Z", "2027-01-04T23:59:59Z"),
        ("2027-12-04", "2027-12-04T23:59:59Z"),  # the last day of the window
    ],
)
def test_api_acceptance_lasts_to_the_end_of_the_day_named(small_world, personas, until, stored):
    finding = privileged(small_world)
    lead = api_client(personas["security_lead"])
    with time_machine.travel(NOW, tick=False):
        response = lead.post(
            f"/api/v1/findings/{finding.pk}/accept/",
            {"reason": "accepted while the fix rolls out", "until": until},
            format="json",
        )
    assert response.status_code == 200, response.json()
    finding.refresh_from_db()
    assert finding.accepted_until == datetime.fromisoformat(stored)


@pytest.mark.parametrize(
    "until",
    [
        (NOW + timedelta(minutes=5)).isoformat(),  # today: not from tomorrow
        "2026-12-05",
        "2027-12-05",  # past the 365-day window (the page's last day is 2027-12-04)
        "next week",
    ],
)
def test_api_acceptance_refuses_what_the_page_refuses(small_world, personas, until):
    finding = privileged(small_world)
    lead = api_client(personas["security_lead"])
    with time_machine.travel(NOW, tick=False):
        response = lead.post(
            f"/api/v1/findings/{finding.pk}/accept/",
            {"reason": "accepted while the fix rolls out", "until": until},
            format="json",
        )
    assert response.status_code == 400
    detail = response.json()["detail"]
    assert "2026-12-06 to 2027-12-04" in detail or "YYYY-MM-DD" in detail
    finding.refresh_from_db()
    assert finding.status == "open"


def test_accept_from_the_tenant_page(small_world, personas):
    finding = privileged(small_world)
    client = Client()
    client.force_login(personas["security_lead"])
    assert "Accept the risk" in client.get("/tenants/beta/").content.decode()
    day = (timezone.now() + timedelta(days=10)).date().isoformat()
    client.post(
        f"/findings/{finding.pk}/accept/", {"reason": "accepted for the pilot", "until": day}
    )
    finding.refresh_from_db()
    assert finding.status == "accepted" and finding.accepted_by == personas["security_lead"]
    other = Client()
    other.force_login(personas["platform_engineer"])
    assert other.post(f"/findings/{finding.pk}/accept/", {}).status_code == 403


def test_csv_is_safe_in_a_spreadsheet():
    assert spreadsheet_safe('=HYPERLINK("http://x")') == '\'=HYPERLINK("http://x")'
    assert spreadsheet_safe("+1") == "'+1" and spreadsheet_safe("@SUM(A1)") == "'@SUM(A1)"
    assert spreadsheet_safe("team-alpha") == "team-alpha"
    row = {
        "id": 1,
        "check": "POD-001",
        "severity": "critical",
        "status": "open",
        "title": "=cmd|' /C calc'!A0",
        "mappings": [],
        "evidence": {},
    }
    parsed = list(csv.DictReader(io.StringIO(findings_csv([row]))))
    assert parsed[0]["title"].startswith("'=")


def test_exports_from_the_api_are_scoped_and_valid_sarif(small_world, personas):
    lead = api_client(personas["security_lead"])
    response = lead.get("/api/v1/findings/export/?format=sarif&status=open")
    assert response["Content-Type"].startswith("application/sarif+json")
    document = json.loads(content(response))
    Sarif.model_validate(document)  # the SARIF 2.1.0 object model
    run = document["runs"][0]
    assert document["version"] == "2.1.0" and run["tool"]["driver"]["name"] == "gpuposture"
    rule_ids = [rule["id"] for rule in run["tool"]["driver"]["rules"]]
    assert all(rule_ids[r["ruleIndex"]] == r["ruleId"] for r in run["results"])
    assert {r["level"] for r in run["results"]} <= {"error", "warning", "note"}
    assert len(run["results"]) == Finding.objects.filter(status="open").count()
    viewer = api_client(personas["viewer_alpha"]).get("/api/v1/findings/export/?format=csv")
    rows = list(csv.DictReader(io.StringIO(content(viewer).decode())))
    # One row per finding, its tenants in one cell: the viewer sees only its own.
    assert {row["tenants"] for row in rows} == {"alpha"}


def test_the_check_catalogue_and_frameworks(small_world, personas):
    lead = api_client(personas["security_lead"])
    checks = {c["id"]: c for c in lead.get("/api/v1/checks/").json()["results"]}
    assert {"SHARE-001", "POD-001", "K8S-002", "DRIFT-001"} <= set(checks)
    assert checks["POD-001"]["open_findings"] == 1 and checks["POD-001"]["remediation"]
    assert lead.get("/api/v1/checks/pod-001/").json()["id"] == "POD-001"
    assert lead.get("/api/v1/checks/NOPE-1/").status_code == 404
    controls = {c["control"]: c for c in lead.get("/api/v1/checks/frameworks/").json()}
    assert "POD-001" in controls["ATT&CK:T1611"]["checks"]
    client = Client()
    client.force_login(personas["auditor"])
    assert "SHARE-001" in client.get("/checks/").content.decode()
    assert "SP800-53:SC-4" in client.get("/checks/frameworks/").content.decode()


def test_an_exemption_sets_aside_one_resource_and_shows_on_the_check_page(small_world, personas):
    from django.db import IntegrityError, transaction

    CheckExemption.objects.create(
        check_id="POD-001",
        namespace="beta-prod",
        name="inference-0",
        reason="vendor-supported profiling agent, reviewed 2026-11",
    )
    run = posture_evaluate()
    assert privileged(small_world).status == "resolved"
    assert run.counts["exempted"] == {"POD-001": 1}
    client = Client()
    client.force_login(personas["security_lead"])
    page = client.get("/checks/POD-001/").content.decode()
    assert "vendor-supported profiling agent" in page and "1 finding set aside" in page
    with pytest.raises(IntegrityError), transaction.atomic():
        CheckExemption.objects.create(check_id="POD-001", reason="switch the check off")


SARIF_SCHEMA = Path(__file__).resolve().parents[1] / "var" / "schemas" / "sarif-2.1.0-rtm.5.json"


def test_the_sarif_export_validates_against_the_official_schema(small_world, personas):
    """The OASIS SARIF 2.1.0 JSON schema, fetched by `make install` (never committed)."""
    import jsonschema

    if not SARIF_SCHEMA.exists():
        pytest.skip(f"{SARIF_SCHEMA} absent: `make install` fetches it with npm")
    schema = json.loads(SARIF_SCHEMA.read_text())
    validator = jsonschema.Draft4Validator(
        schema, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER
    )
    answer = api_client(personas["security_lead"]).get("/api/v1/findings/export/?format=sarif")
    document = json.loads(content(answer))
    assert document["runs"][0]["results"], "nothing to validate"
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.path))
    assert not errors, [f"{list(e.path)}: {e.message}" for e in errors[:5]]
    broken = {**document, "runs": [{**document["runs"][0], "results": [{"ruleId": 7}]}]}
    assert list(validator.iter_errors(broken))  # the schema does judge what it is given


def test_an_exemption_naming_a_nearer_controller_shows_on_the_check_page(
    tmp_path, personas, admin_client
):
    """An admin names the ReplicaSet kubectl shows in a pod's ownerReferences; the finding is
    the Deployment's (its top controller). Through a real sync, score and page."""
    from inventory.services import cluster_sync_from_snapshot
    from inventory.sync import cluster_get_or_create
    from tenants.services import tenants_apply
    from tenants.spec import parse_tenants_document
    from tests.inventory.owner_chain_world import NS
    from tests.posture.test_exemption_chains import DEPLOYMENT, OLD_RS, deployment

    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}
    snapshot = tmp_path / "cluster.json"
    items = [namespace, *deployment(OLD_RS, pods_each=2)]
    snapshot.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    document = {"tenants": [{"slug": "a", "name": "A", "trust_class": "internal"}]}
    document["tenants"][0]["namespaces"] = [NS]
    tenants_apply(specs=parse_tenants_document(document))
    cluster = cluster_get_or_create(name="chains")
    cluster_sync_from_snapshot(cluster=cluster, paths=[snapshot])
    posture_evaluate()
    finding = Finding.objects.get(cluster=cluster, check_id="POD-008")
    assert (finding.subject_kind, finding.subject_name) == ("Deployment", DEPLOYMENT[2])
    assert finding.status == "open"
    CheckExemption.objects.create(
        check_id="POD-008",
        namespace=NS,
        kind="ReplicaSet",
        name=OLD_RS[2],
        reason="rotated keys in a frozen release, reviewed 2026-12",
    )
    run = posture_evaluate()
    finding.refresh_from_db()
    assert finding.status == "resolved" and run.counts["exempted"] == {"POD-008": 1}
    client = Client()
    client.force_login(personas["security_lead"])
    page = client.get("/checks/POD-008/").content.decode()
    assert "rotated keys in a frozen release" in page and "1 finding set aside" in page
    # The admin's form says the same rule.
    form = admin_client.get("/admin/posture/checkexemption/add/").content.decode()
    assert "every pod the finding reports is under that object" in form
