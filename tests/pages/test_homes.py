"""Each role lands on its own home after signing in, with a menu of what it can use, no false
empty state, and error pages that carry the layout (issue 19 item 6)."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.utils import timezone

from audit.services import audit_record
from inventory.models import Cluster, SyncRun
from providers.models import Assessment, Provider, Questionnaire
from tenants.models import SharingRequest, Tenant

pytestmark = pytest.mark.django_db


def page(user, url: str, **extra) -> tuple[int, str]:
    client = Client(raise_request_exception=False)
    client.force_login(user)
    response = client.get(url, **extra)
    return response.status_code, response.content.decode()


def menu(html: str) -> list[str]:
    nav = re.search(r'<nav aria-label="Main">(.*?)</nav>', html, re.S)
    assert nav, "the page carries the menu"
    return re.findall(r">([^<]+)</a>", nav.group(1))


def test_signing_in_lands_on_home(personas):
    client = Client()
    user = personas["platform_engineer"]
    response = client.post(
        "/accounts/login/", {"login": user.username, "password": "not-used-in-tests-1"}
    )
    assert response.status_code == 302
    assert response["Location"] == "/home/"


def test_security_lead_home_is_the_ranked_risk_overview(small_world, personas):
    status, html = page(personas["security_lead"], "/home/")
    assert status == 200
    assert "Tenants by risk" in html
    assert "Team Alpha" in html and "Beta Corp" in html


def test_platform_engineer_home_shows_pending_requests_syncs_and_patching(small_world, personas):
    alpha = Tenant.objects.get(slug="alpha")
    SharingRequest.objects.create(
        tenant=alpha,
        cluster=small_world,
        mode="mig_gi",
        justification="training",
        requested_by=personas["viewer_alpha"],
    )
    broken = Cluster.objects.create(name="broken")
    SyncRun.objects.create(
        cluster=broken,
        source="s.json",
        status="failed",
        error="snapshot truncated",
        finished_at=timezone.now(),
    )
    status, html = page(personas["platform_engineer"], "/home/")
    assert status == 200
    assert "Sharing requests waiting for a decision (1)" in html
    assert "MIG GPU instance" in html  # the mode in words, not `mig_gi`
    assert "mig_gi" not in html
    syncs = html.split('id="home-syncs"')[1].split("</section>")[0]
    assert 'href="/clusters/broken/"' in syncs and "snapshot truncated" in syncs
    assert "Patch plan" in html
    assert "Approvals" in menu(html) and "Audit log" not in menu(html)


def test_procurement_home_lists_assessments_to_fill_and_renewals(personas):
    questionnaire = Questionnaire.objects.create(
        slug="q", version=1, title="Provider questions", spec={}, spec_hash="x"
    )
    draft_at = Provider.objects.create(slug="nimbus", name="Nimbus GPU")
    due_at = Provider.objects.create(slug="helio", name="Helio GPU")
    Assessment.objects.create(
        provider=draft_at, questionnaire=questionnaire, created_by=personas["procurement"]
    )
    Assessment.objects.create(
        provider=due_at,
        questionnaire=questionnaire,
        created_by=personas["procurement"],
        status="accepted",
        expires_at=timezone.now() + timezone.timedelta(days=20),
    )
    status, html = page(personas["procurement"], "/home/")
    assert status == 200
    to_fill = html.split('id="home-to-fill"')[1].split("</section>")[0]
    renewals = html.split('id="home-renewals"')[1].split("</section>")[0]
    assert "Nimbus GPU" in to_fill and "Helio GPU" not in to_fill
    assert "Helio GPU" in renewals and "Nimbus GPU" in renewals  # Nimbus: no accepted one
    # Procurement's menu: providers, not the posture pages it cannot use.
    assert menu(html) == ["Home", "Providers", "API"]


def test_auditor_home_shows_the_audit_log_and_frameworks(small_world, personas):
    alpha = Tenant.objects.get(slug="alpha")
    audit_record(actor=personas["security_lead"], action="update", obj=alpha, after={"x": 1})
    status, html = page(personas["auditor"], "/home/")
    assert status == 200
    events = html.split('id="home-events"')[1].split("</section>")[0]
    assert "sec" in events and "alpha" in events
    assert 'href="/checks/frameworks/"' in html
    assert {"Audit log", "Frameworks"} <= set(menu(html))
    assert "MIG" not in menu(html)


def test_tenant_viewer_home_is_their_tenant(small_world, personas):
    status, html = page(personas["viewer_alpha"], "/home/")
    assert status == 200
    assert "<h1>Team Alpha" in html or "Team Alpha</h1>" in html
    assert "Beta Corp" not in html
    items = menu(html)
    assert "Audit log" not in items and "Approvals" not in items and "Nodes" not in items
    assert "Tenants" in items


def test_no_false_empty_state_for_data_that_is_not_theirs(small_world, personas):
    """Clusters exist; a tenant viewer with no tenant is told why the list is empty, not to
    run manage.py."""
    viewer = personas["viewer_beta"]
    Tenant.objects.get(slug="beta").viewers.remove(viewer)
    for url in ("/", "/clusters/", "/nodes/", "/tenants/"):
        status, html = page(viewer, url)
        assert status == 200, url
        assert "manage.py" not in html, url
        assert "tenant viewer sees what their own tenants run" in html, url


def test_forbidden_and_not_found_pages_carry_the_layout_and_say_what_to_do(personas, settings):
    settings.DEBUG = False
    status, html = page(personas["viewer_alpha"], "/audit/")
    assert status == 403
    assert menu(html)[0] == "Home"
    assert "This needs the role auditor or security_lead." in html
    assert "What to do" in html
    status, html = page(personas["viewer_alpha"], "/no-such-page/")
    assert status == 404
    assert menu(html)[0] == "Home" and "What to do" in html
    assert "<title>Not found · gpuposture</title>" in html


def test_server_error_page_has_the_layout():
    from django.template.loader import render_to_string

    html = render_to_string("500.html")
    assert "Something went wrong on our side" in html and 'class="topbar"' in html


def test_sign_in_page_offers_no_sign_up_and_has_a_real_title(db):
    html = Client().get("/accounts/login/").content.decode()
    assert "sign up" not in html.lower()
    assert "/accounts/signup/" not in html
    assert "<title>Sign In · gpuposture</title>" in html
    assert "gpuposture · gpuposture" not in html
