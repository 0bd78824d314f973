"""The findings list: search, pick-lists by name limited to what the user sees, server-side
sort on every column (severity by rank, never by name), accepted findings with who, why and
until when, exports of exactly what is filtered, and a security lead's bulk acceptance."""

from __future__ import annotations

import csv
import io
import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from audit.models import AuditEvent
from posture.finding_list import COLUMNS
from posture.models import Finding
from posture.services import finding_accept
from tests.conftest import content

pytestmark = pytest.mark.django_db
RANK = {"critical": 0, "high": 1, "medium": 2, "low": 3}


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def row_ids(html: str) -> list[int]:
    return [int(i) for i in re.findall(r'<tr id="finding-(\d+)">', html)]


def severities(html: str) -> list[str]:
    ids = row_ids(html)
    by_id = dict(Finding.objects.filter(pk__in=ids).values_list("pk", "severity"))
    return [by_id[i] for i in ids]


def test_severity_is_ordered_by_rank_both_ways(small_world, personas):
    lead = client_for(personas["security_lead"])
    worst_first = severities(lead.get("/findings/").content.decode())
    assert worst_first[0] == "critical" and worst_first[-1] == "low"
    assert [RANK[s] for s in worst_first] == sorted(RANK[s] for s in worst_first)
    best_first = severities(lead.get("/findings/?status=open&sort=-severity").content.decode())
    assert [RANK[s] for s in best_first] == sorted((RANK[s] for s in best_first), reverse=True)


@pytest.mark.parametrize("persona", ["security_lead", "viewer_alpha"])
@pytest.mark.parametrize("column", list(COLUMNS))
def test_every_column_sorts_on_the_server(small_world, personas, column, persona):
    lead = client_for(personas[persona])
    up = lead.get(f"/findings/?status=open&sort={column}")
    down = lead.get(f"/findings/?status=open&sort=-{column}")
    assert up.status_code == down.status_code == 200
    html = up.content.decode()
    assert 'aria-sort="ascending"' in html and f"sort=-{column}" in html  # a click turns it
    assert sorted(row_ids(html)) == sorted(row_ids(down.content.decode()))
    assert row_ids(html)
    if column == "check":
        checks = [Finding.objects.get(pk=i).check_id for i in row_ids(html)]
        assert checks == sorted(checks)
    if column == "tenants" and persona == "viewer_alpha":  # alpha's own first, never beta's
        assert "beta" not in html.split('id="findings"')[1]


def test_search_and_filters_by_name(small_world, personas):
    lead = client_for(personas["security_lead"])
    html = lead.get("/findings/?q=is privileged").content.decode()
    assert {Finding.objects.get(pk=i).check_id for i in row_ids(html)} == {"POD-001"}
    html = lead.get("/findings/?q=inference-0&check=POD-009").content.decode()
    assert len(row_ids(html)) == 1
    # Pick-lists by name: the tenants' names, the clusters, the checks with their titles.
    page = lead.get("/findings/").content.decode()
    tenant_select = page.split('name="tenant"')[1].split("</select>")[0]
    assert 'value="alpha"' in tenant_select and 'value="beta"' in tenant_select
    assert '<option value="lab"' in page and 'value="SHARE-001"' in page


def test_a_viewer_picks_and_searches_only_what_they_see(small_world, personas):
    viewer = client_for(personas["viewer_alpha"])
    page = viewer.get("/findings/").content.decode()
    tenant_select = page.split('name="tenant"')[1].split("</select>")[0]
    assert 'value="alpha"' in tenant_select and "beta" not in tenant_select
    # SHARE-001's stored title names beta; the viewer is shown "(another tenant)", so a
    # search for beta finds nothing, while a search for what they are shown does.
    assert row_ids(viewer.get("/findings/?q=beta&status=").content.decode()) == []
    assert row_ids(viewer.get("/findings/?q=Tenants alpha and be&status=").content.decode()) == []
    shown = row_ids(viewer.get("/findings/?q=time-slice nvidia&status=").content.decode())
    assert shown == [Finding.objects.get(check_id="SHARE-001").pk]


def test_accepted_findings_say_who_why_and_until(small_world, personas):
    finding = Finding.objects.get(check_id="POD-001")
    until = timezone.now() + timedelta(days=9)
    finding_accept(
        finding=finding, user=personas["security_lead"], reason="pilot ends in a week", until=until
    )
    html = client_for(personas["auditor"]).get("/findings/?status=accepted").content.decode()
    assert row_ids(html) == [finding.pk]
    assert f"by sec until {until:%Y-%m-%d}: pilot ends in a week" in html


def test_the_export_links_carry_exactly_the_filters(small_world, personas):
    lead = client_for(personas["security_lead"])
    html = lead.get("/findings/?severity=medium&status=open&q=namespace&sort=-title")
    html = html.content.decode()
    shown = set(row_ids(html))
    link = re.search(r'href="(/api/v1/findings/export/\?format=csv[^"]*)"', html).group(1)
    link = link.replace("&amp;", "&")
    assert "sort=" not in link and "q=namespace" in link
    rows = list(csv.DictReader(io.StringIO(content(lead.get(link)).decode())))
    assert {int(r["id"]) for r in rows} == shown and shown
    # A first visit lists open findings, and so does its export.
    first = lead.get("/findings/").content.decode()
    assert "export/?format=json&amp;status=open" in first


def test_bulk_accept_by_the_rules_of_one(small_world, personas):
    lead = client_for(personas["security_lead"])
    picked = list(Finding.objects.filter(severity="medium").values_list("pk", flat=True)[:3])
    resolved = Finding.objects.get(check_id="STACK-006")
    resolved.status, resolved.resolved_at = "resolved", timezone.now()
    resolved.save()
    soon = (timezone.now() + timedelta(days=30)).date().isoformat()
    # Refused as a whole (a short reason): the list comes back with what was typed.
    refused = lead.post(
        "/findings/accept/",
        {"ids": picked, "reason": "short", "until": soon, "back": "severity=medium"},
    )
    assert refused.status_code == 400
    html = refused.content.decode()
    assert "short</textarea>" in html and f'value="{soon}"' in html
    assert all(
        f'value="{pk}" form="bulk-accept" aria-label="Pick finding {pk}" checked' in html
        for pk in picked
    )
    assert not Finding.objects.filter(status="accepted").exists()
    # Accepted one by one, each its own audit event; a resolved one is refused by name.
    done = lead.post(
        "/findings/accept/",
        {
            "ids": [*picked, resolved.pk],
            "reason": "isolated pool until the upgrade",
            "until": soon,
            "back": "severity=medium",
        },
    )
    assert done.status_code == 302 and done["Location"] == "/findings/?severity=medium"
    assert set(Finding.objects.filter(status="accepted").values_list("pk", flat=True)) == set(
        picked
    )
    events = AuditEvent.objects.filter(action="accept")
    assert sorted(int(e.object_id) for e in events) == sorted(picked)
    follow = lead.get(done["Location"]).content.decode()
    assert f"#{resolved.pk} STACK-006 not accepted" in follow and "3 findings" in follow
    # Only a security lead.
    other = client_for(personas["platform_engineer"])
    assert other.post("/findings/accept/", {"ids": picked}).status_code == 403


def test_the_api_searches_as_the_page_does(small_world, personas):
    from tests.conftest import api_client

    lead = api_client(personas["security_lead"]).get("/api/v1/findings/?q=beta").json()
    assert lead["count"] > 0
    viewer = api_client(personas["viewer_alpha"]).get("/api/v1/findings/?q=beta").json()
    assert viewer["count"] == 0
