"""The finding page (evidence as tables, history, tenants redacted for viewers, links, ticket
and owner) and the forms on it: what was typed is kept and the error is beside its field."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from audit.models import AuditEvent
from posture.models import EarlierAcceptance, Finding
from tests.conftest import api_client

pytestmark = pytest.mark.django_db


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def shared(cluster) -> Finding:
    """SHARE-001: alpha and beta time-slice one GPU (its title and evidence name both)."""
    return Finding.objects.get(cluster=cluster, check_id="SHARE-001")


def privileged(cluster) -> Finding:
    return Finding.objects.get(cluster=cluster, check_id="POD-001", subject_name="inference-0")


def test_the_finding_page_shows_evidence_as_tables_and_where_to_go(small_world, personas):
    finding = shared(small_world)
    html = client_for(personas["security_lead"]).get(f"/findings/{finding.pk}/").content.decode()
    evidence = html.split('id="evidence-h"')[1]
    # Tables, not JSON: the parties (a list of dicts) are a table with a column per key.
    assert '<table class="evidence">' in evidence and '<th scope="col">party</th>' in evidence
    assert '"co_residence"' not in evidence and "{&#x27;" not in evidence
    assert '<th scope="row">co residence</th><td>certain</td>' in evidence
    assert f'href="/checks/{finding.check_id}/"' in html
    assert 'href="/nodes/lab/gpu-ts-1/"' in html  # the node it is about
    assert f"object_type=posture.finding&amp;object_id={finding.pk}" in html  # its audit events
    assert 'href="/tenants/alpha/"' in html and 'href="/tenants/beta/"' in html
    assert "first seen" in html


def test_a_workload_finding_links_the_nodes_its_pods_run_on(small_world, personas):
    finding = privileged(small_world)
    html = client_for(personas["auditor"]).get(f"/findings/{finding.pk}/").content.decode()
    assert 'href="/nodes/lab/gpu-ts-1/"' in html and "runs its pods" in html
    assert "Accept the risk" not in html  # an auditor reads, a security lead triages


def test_a_tenant_viewer_sees_the_other_tenant_only_as_another_tenant(small_world, personas):
    finding = shared(small_world)
    viewer = client_for(personas["viewer_alpha"])
    html = viewer.get(f"/findings/{finding.pk}/").content.decode()
    assert "(another tenant)" in html and 'href="/tenants/alpha/"' in html
    assert not re.search(r"\bbeta\b", html), "the other tenant is named"
    assert "audit" not in html.split("<main>")[1].lower()  # no audit log for viewers
    # beta's privileged pod runs beside alpha's: it affects alpha too, who sees it with beta's
    # names hidden (POD-001's neighbours).
    html = viewer.get(f"/findings/{privileged(small_world).pk}/").content.decode()
    assert "(another tenant" in html and not re.search(r"\bbeta\b", html)
    assert "inference-0" not in html
    # A finding of beta's alone is not theirs to see.
    alone = Finding.objects.filter(cluster=small_world, tenants__slug="beta").exclude(
        tenants__slug="alpha"
    )
    assert viewer.get(f"/findings/{alone.first().pk}/").status_code == 404


def test_a_refused_acceptance_keeps_what_was_typed_beside_the_field(small_world, personas):
    finding = privileged(small_world)
    lead = client_for(personas["security_lead"])
    page = lead.get(f"/findings/{finding.pk}/").content.decode()
    today = timezone.now().date()
    # The limits are on the date input and stated before anyone hits them.
    assert f'min="{today + timedelta(days=1)}"' in page
    assert f'max="{today + timedelta(days=364)}"' in page and "at most 365 days" in page
    too_far = (today + timedelta(days=400)).isoformat()
    response = lead.post(
        f"/findings/{finding.pk}/accept/",
        {"reason": "the vendor ships a fix next quarter", "until": too_far},
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert "the vendor ships a fix next quarter</textarea>" in html  # kept
    assert f'value="{too_far}"' in html
    until_field = html.split('for="id_until"')[1].split("</p>")[0]
    assert "Choose a day from" in until_field  # the error is beside the date
    finding.refresh_from_db()
    assert finding.status == "open"
    # Within the limits it is accepted, and the page's history says by whom and why.
    soon = (today + timedelta(days=20)).isoformat()
    response = lead.post(
        f"/findings/{finding.pk}/accept/",
        {"reason": "the vendor ships a fix next quarter", "until": soon},
    )
    assert response.status_code == 302 and response["Location"] == f"/findings/{finding.pk}/"
    html = lead.get(f"/findings/{finding.pk}/").content.decode()
    history = html.split('id="history"')[1].split("</section>")[0]
    assert f"risk accepted until {soon}" in history and "sec" in history
    assert "the vendor ships a fix next quarter" in history


def test_a_security_lead_sets_ticket_and_owner_audited(small_world, personas):
    finding = privileged(small_world)
    lead = client_for(personas["security_lead"])
    bad = lead.post(
        f"/findings/{finding.pk}/triage/", {"ticket_url": "javascript:alert(1)", "owner": "plat"}
    )
    assert bad.status_code == 400
    html = bad.content.decode()
    assert 'value="javascript:alert(1)"' in html and "Enter a valid URL" in html
    finding.refresh_from_db()
    assert finding.ticket_url == "" and finding.owner is None
    ok = lead.post(
        f"/findings/{finding.pk}/triage/",
        {"ticket_url": "https://tracker.example/SEC-42", "owner": "plat"},
    )
    assert ok.status_code == 302
    finding.refresh_from_db()
    assert finding.ticket_url == "https://tracker.example/SEC-42"
    assert finding.owner == personas["platform_engineer"]
    event = AuditEvent.objects.get(action="triage", object_id=str(finding.pk))
    assert event.actor_name == "sec" and event.after["owner"] == "plat"
    assert event.before["ticket_url"] == "" and event.after["ticket_url"].endswith("SEC-42")
    # The API shows both; only a security lead may set them.
    row = api_client(personas["auditor"]).get(f"/api/v1/findings/{finding.pk}/").json()
    assert row["ticket_url"].endswith("SEC-42") and row["owner"] == "plat"
    listed = api_client(personas["auditor"]).get("/api/v1/findings/?check=POD-001").json()
    assert listed["results"][0]["owner"] == "plat"
    beta = finding.tenants.get(slug="beta")
    posture = api_client(personas["auditor"]).get(f"/api/v1/tenants/{beta.pk}/posture/").json()
    owned = [f for f in posture["findings"] if f["id"] == finding.pk]
    assert owned[0]["owner"] == "plat"
    other = client_for(personas["platform_engineer"])
    assert other.post(f"/findings/{finding.pk}/triage/", {"owner": "plat"}).status_code == 403


def test_a_security_lead_withdraws_an_acceptance_from_the_page(small_world, personas):
    finding = privileged(small_world)
    lead = client_for(personas["security_lead"])
    day = (timezone.now() + timedelta(days=10)).date().isoformat()
    lead.post(f"/findings/{finding.pk}/accept/", {"reason": "pilot ends soon", "until": day})
    assert "Withdraw the acceptance" in lead.get(f"/findings/{finding.pk}/").content.decode()
    assert lead.post(f"/findings/{finding.pk}/reopen/").status_code == 302
    finding.refresh_from_db()
    assert finding.status == "open"
    html = lead.get(f"/findings/{finding.pk}/").content.decode()
    assert "acceptance withdrawn: open again" in html
    auditor = client_for(personas["auditor"])
    assert auditor.post(f"/findings/{finding.pk}/reopen/").status_code == 403


def test_the_finding_page_costs_a_fixed_number_of_queries(small_world, personas):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    finding = shared(small_world)
    lead = client_for(personas["security_lead"])
    for day in (10, 20, 30):  # history from the audit log: its length costs no query
        until = (timezone.now() + timedelta(days=day)).date().isoformat()
        lead.post(f"/findings/{finding.pk}/accept/", {"reason": "renewed again", "until": until})
    # Acceptances of narrower findings it spans (posture.acceptance_carry): their number costs
    # no query either.
    EarlierAcceptance.objects.bulk_create(
        EarlierAcceptance(
            finding=finding,
            subject=f"Node gpu-{n}",
            accepted_by=personas[name],
            reason="burn-in node",
            until=timezone.now() + timedelta(days=n),
            covers=3,
            of=5,
            recorded_at=timezone.now(),
        )
        for n, name in ((1, "security_lead"), (2, "auditor"), (3, "security_lead"))
    )
    with CaptureQueriesContext(connection) as ctx:
        assert lead.get(f"/findings/{finding.pk}/").status_code == 200
    # session + user + roles + the finding (cluster, acceptor, owner joined) + its tenants +
    # its audit events + its earlier acceptances (acceptors joined) + the node + the owner
    # pick-list + the kinds the last sync did not read (whether it re-judged the finding)
    assert len(ctx.captured_queries) <= 10, [q["sql"][:90] for q in ctx.captured_queries]
