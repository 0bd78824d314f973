"""An acceptance past its expiry reads open everywhere at once (DESIGN §5: "after which it is
open again"), with no evaluation run: the API (one finding, the list, ?status=), the exports,
the pages and the counts. The stored row stays accepted until an evaluation reopens it and
records the `expire` audit event, once."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from audit.models import AuditEvent
from gpuposture.base.finding_status import effective_status
from posture.acceptance import acceptance_until
from posture.catalogue import open_counts
from posture.models import Finding, PostureRun
from posture.overview import overview_rows
from posture.policy_reports import report_items
from posture.services import finding_accept, posture_evaluate
from tests.conftest import api_client, content

pytestmark = pytest.mark.django_db

TODAY = datetime(2026, 3, 10, 9, 0, tzinfo=UTC)
UNTIL = datetime(2026, 3, 11, 23, 59, 59, tzinfo=UTC)  # "until 2026-03-11": its end, UTC
LATER = UNTIL + timedelta(days=3)  # three days after it expired, nothing evaluated since


def privileged(cluster) -> Finding:
    """POD-001 on beta's inference-0: one open finding of one tenant."""
    return Finding.objects.get(cluster=cluster, check_id="POD-001", subject_name="inference-0")


@pytest.fixture
def accepted(small_world, personas) -> Finding:
    """The finding, accepted on TODAY until the end of the next day."""
    finding = privileged(small_world)
    with time_machine.travel(TODAY, tick=False):
        finding_accept(
            finding=finding,
            user=personas["security_lead"],
            reason="the vendor's debug build, gone next sprint",
            until=acceptance_until(TODAY.date() + timedelta(days=1), TODAY.date()),
        )
    finding.refresh_from_db()
    assert finding.status == "accepted" and finding.accepted_until == UNTIL
    return finding


def listed_ids(user, query: str) -> set[int]:
    body = api_client(user).get(f"/api/v1/findings/?{query}&page_size=500").json()
    return {row["id"] for row in body["results"]}


@pytest.mark.parametrize(
    "status, until, now, shown",
    [
        ("accepted", UNTIL, UNTIL - timedelta(seconds=1), "accepted"),
        ("accepted", UNTIL, UNTIL, "open"),  # it lasts to the end of its day, not past it
        ("accepted", UNTIL, LATER, "open"),
        ("accepted", None, LATER, "accepted"),  # no expiry: never lapses
        ("open", None, LATER, "open"),
        ("resolved", UNTIL, LATER, "resolved"),  # resolved stays resolved, whatever it was
    ],
)
def test_the_effective_status(status, until, now, shown):
    assert effective_status(status, until, now) == shown


def test_the_api_reads_an_expired_acceptance_as_open_without_an_evaluation(
    accepted, personas, settings
):
    # A worker runs, and beat has not swept yet: the reads say it, without writing.
    settings.CELERY_TASK_ALWAYS_EAGER = False
    lead = personas["security_lead"]
    with time_machine.travel(UNTIL - timedelta(minutes=1), tick=False):
        assert accepted.pk in listed_ids(lead, "status=accepted")  # cached: shared_read
        assert accepted.pk not in listed_ids(lead, "status=open")
    with time_machine.travel(UNTIL + timedelta(minutes=1), tick=False):
        # The same URLs two minutes later, well within the cache's lifetime: answered anew.
        assert accepted.pk in listed_ids(lead, "status=open")
        assert accepted.pk not in listed_ids(lead, "status=accepted")
    runs, expired = PostureRun.objects.count(), AuditEvent.objects.filter(action="expire").count()
    with time_machine.travel(LATER, tick=False):
        one = api_client(lead).get(f"/api/v1/findings/{accepted.pk}/").json()
        assert one["status"] == "open" and one["accepted_until"] == "2026-03-11T23:59:59Z"
        assert one["risk"] > 0  # what it adds as an open finding
        row = next(
            r
            for r in api_client(lead).get("/api/v1/findings/?page_size=500").json()["results"]
            if r["id"] == accepted.pk
        )
        assert row["status"] == "open" and row == {key: one[key] for key in row}
        assert accepted.pk in listed_ids(lead, "status=open")
        assert accepted.pk not in listed_ids(lead, "status=accepted")
        # A tenant viewer of the tenant it affects reads it the same.
        assert accepted.pk in listed_ids(personas["viewer_beta"], "status=open")
    # Reading wrote nothing: the evaluation reopens the row and records it, once.
    accepted.refresh_from_db()
    assert accepted.status == "accepted"
    assert PostureRun.objects.count() == runs
    assert AuditEvent.objects.filter(action="expire").count() == expired
    with time_machine.travel(LATER, tick=False):
        posture_evaluate()
    accepted.refresh_from_db()
    assert accepted.status == "open"
    assert AuditEvent.objects.filter(action="expire").count() == expired + 1


def test_the_list_costs_the_same_queries_with_an_expired_acceptance(accepted, personas, settings):
    settings.GPUPOSTURE_READ_CACHE_SECONDS = 0  # count the list itself
    settings.CELERY_TASK_ALWAYS_EAGER = False  # a worker's: beat sweeps, the read does not
    lead = api_client(personas["security_lead"])

    def queries(query: str) -> int:
        with CaptureQueriesContext(connection) as captured:
            assert lead.get(f"/api/v1/findings/?{query}").status_code == 200
        return len(captured)

    queries("")  # the user's roles are read once, then kept on the user
    with time_machine.travel(UNTIL - timedelta(hours=1), tick=False):
        before = [queries(q) for q in ("", "status=open")]
    with time_machine.travel(LATER, tick=False):
        after = [queries(q) for q in ("", "status=open")]
    # count + page + the page's tenants: the status is read in SQL and from the row.
    assert after == before == [3, 3]


def export(*args: str) -> str:
    out, err = io.StringIO(), io.StringIO()
    call_command("export_findings", *args, stdout=out, stderr=err)
    return out.getvalue()


def test_exports_carry_the_effective_status(accepted):
    with time_machine.travel(LATER, tick=False):
        opened = json.loads(export("--status", "open"))
        still = json.loads(export("--status", "accepted"))
        rows = list(csv.DictReader(io.StringIO(export("--format", "csv"))))
        sarif = json.loads(export("--format", "sarif"))
        reports = report_items(json.loads(export("--format", "policyreport")))
    assert accepted.pk in {r["id"] for r in opened}
    assert accepted.pk not in {r["id"] for r in still}
    assert next(r for r in rows if r["id"] == str(accepted.pk))["status"] == "open"
    result = next(
        r for r in sarif["runs"][0]["results"] if r["properties"]["findingId"] == accepted.pk
    )
    assert result["properties"]["status"] == "open" and "suppressions" not in result
    ours = [
        r
        for report in reports
        if report
        for r in report.get("results") or []
        if r["properties"]["findingId"] == str(accepted.pk)
    ]
    assert [r["result"] for r in ours] == ["fail"]


def test_the_api_export_carries_the_effective_status(accepted, personas):
    lead = api_client(personas["security_lead"])
    with time_machine.travel(LATER, tick=False):
        response = lead.get("/api/v1/findings/export/?format=json&status=open")
    assert accepted.pk in {r["id"] for r in json.loads(content(response))}


def page(user, path: str) -> str:
    client = Client()
    client.force_login(user)
    response = client.get(path)
    assert response.status_code == 200
    return response.content.decode()


def test_the_pages_say_the_acceptance_expired(accepted, personas, settings):
    # A worker runs, and beat has not swept yet: the pages say what the score has not seen.
    # (With no worker, a read of scores sweeps first: tests/posture/test_rescore.py.)
    settings.CELERY_TASK_ALWAYS_EAGER = False
    lead = personas["security_lead"]
    with time_machine.travel(LATER, tick=False):
        detail = page(lead, f"/findings/{accepted.pk}/")
        listed = page(lead, "/findings/?status=open&check=POD-001")
        tenant = page(lead, "/tenants/beta/?check=POD-001")
    assert '<span class="status status-open">open</span>' in detail
    assert "Acceptance expired on 2026-03-11" in detail
    assert "acceptance expired: open again" in detail  # a history line
    assert "Accept the risk" in detail and "Withdraw the acceptance" not in detail
    row = listed.split(f'id="finding-{accepted.pk}"')[1].split("</tr>")[0]
    assert "status-open" in row and "acceptance expired on 2026-03-11" in row
    row = tenant.split(f'id="finding-{accepted.pk}"')[1].split("</tr>")[0]
    assert "status-open" in row and "acceptance expired on 2026-03-11" in row
    assert "An acceptance expired since the last score" in tenant
    assert "Accept the risk" in row  # open: it may be accepted again from the tenant page


def test_before_the_expiry_the_pages_say_accepted(accepted, personas):
    with time_machine.travel(UNTIL - timedelta(hours=1), tick=False):
        detail = page(personas["security_lead"], f"/findings/{accepted.pk}/")
        tenant = page(personas["security_lead"], "/tenants/beta/?check=POD-001")
    assert '<span class="status status-accepted">accepted</span>' in detail
    assert "Accepted by sec until 2026-03-11" in detail and "expired" not in detail
    assert "An acceptance expired since the last score" not in tenant


def test_the_counts_count_it_open(accepted, personas):
    lead = personas["security_lead"]
    with time_machine.travel(UNTIL - timedelta(hours=1), tick=False):
        before = {r.tenant_slug: r.open_counts for r in overview_rows(lead)}["beta"]
        checks_before = open_counts(lead).get("POD-001", 0)
    with time_machine.travel(LATER, tick=False):
        after = {r.tenant_slug: r.open_counts for r in overview_rows(lead)}["beta"]
        checks_after = open_counts(lead).get("POD-001", 0)
        checks = api_client(lead).get("/api/v1/checks/POD-001/").json()
    assert after[accepted.severity] == before[accepted.severity] + 1
    assert checks_after == checks_before + 1 == checks["open_findings"]
