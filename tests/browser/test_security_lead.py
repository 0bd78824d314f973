"""The security lead's day (issue 19): from the overview's top fix-first action to its
findings, into one finding (evidence as tables, history, tenants), and a risk accepted with a
reason and an expiry inside the limits the form states. Screenshots in
var/screenshots/<test name>/."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from tests.browser.conftest import Watched

pytestmark = pytest.mark.django_db(transaction=True)

REASON = "Isolated by a network policy until the driver upgrade on the 14th."


def test_security_lead_triages_the_top_action_and_accepts_a_risk(
    demo_world, chromium, live_server, screens
):
    from posture.models import Action, Finding

    top = Action.objects.order_by("-risk_removed", "key").first()
    lead = Watched(chromium, live_server.url, screens)
    try:
        lead.login("security-lead")
        lead.go("/")
        lead.shot("01-overview")
        # The top action's findings: the first "N findings" link of the ranked actions.
        lead.page.locator("a[href*='/findings/?action=']").first.click()
        lead.page.wait_for_load_state("networkidle")
        lead.check()
        assert f"action={top.key}" in lead.page.url
        rows = lead.page.locator("table#findings tbody tr")
        assert rows.count() == min(top.finding_count, 50)
        lead.shot("02-top-action-findings")
        # Into the first of them (its title links to its page).
        rows.first.locator("td a[href^='/findings/']").click()
        lead.page.wait_for_load_state("networkidle")
        lead.check()
        finding = Finding.objects.get(pk=int(lead.page.url.rstrip("/").rsplit("/", 1)[1]))
        assert finding.pk in top.finding_ids and finding.status == "open"
        page = lead.page
        assert page.locator("h1").inner_text() == finding.title
        assert page.locator(".evidence-box table.evidence").count() >= 1  # tables, not JSON
        assert "first seen" in page.locator("section[aria-labelledby=history]").inner_text()
        assert page.locator(f"a[href='/checks/{finding.check_id}/']").count() >= 1
        lead.shot("03-finding")
        # The form states its limits before they are hit: the date input has min and max.
        until = page.locator("#accept-form input[name=until]")
        today = timezone.now().date()
        assert until.get_attribute("min") == (today + timedelta(days=1)).isoformat()
        assert until.get_attribute("max") == (today + timedelta(days=364)).isoformat()
        assert "at most 365 days" in page.locator("#accept-form").inner_text()
        expiry = (today + timedelta(days=30)).isoformat()
        page.fill("#accept-form textarea[name=reason]", REASON)
        until.fill(expiry)
        lead.shot("04-accepting")
        page.click("#accept-form button[type=submit]")
        page.wait_for_load_state("networkidle")
        lead.check()
        assert f"until {expiry}" in page.locator("ul.messages").inner_text()
        history = page.locator("section[aria-labelledby=history]").inner_text()
        assert f"risk accepted until {expiry}" in history and REASON in history
        assert "security-lead" in history
        lead.shot("05-accepted")
        finding.refresh_from_db()
        assert finding.status == "accepted" and finding.accepted_by.username == "security-lead"
        # Back on the list of accepted findings: who, why and until when.
        lead.go("/findings/?status=accepted&sort=-last_seen")
        assert REASON in lead.page.locator("table#findings").inner_text()
        lead.shot("06-accepted-list")
    finally:
        lead.close()
    a_viewer_reads_a_shared_finding(chromium, live_server.url, screens)


def a_viewer_reads_a_shared_finding(chromium, url: str, screens) -> None:
    """A tenant viewer opens a finding their tenant shares with another: it is there, as
    "(another tenant)", and no other tenant is named anywhere on the page. (The demo's viewer
    watches orbital, which shares no finding: here they are given a sharing tenant's view.)"""
    from django.contrib.auth import get_user_model
    from django.db.models import Count

    from posture.models import Finding
    from tenants.models import Tenant

    shared = (
        Finding.objects.filter(status="open")
        .annotate(parties=Count("tenant_links"))
        .filter(parties__gt=1)
        .order_by("id")
        .first()
    )
    mine = shared.tenants.order_by("slug").first()
    mine.viewers.add(get_user_model().objects.get(username="viewer-orbital"))
    others = Tenant.objects.filter(findings=shared).exclude(pk=mine.pk)
    viewer = Watched(chromium, url, screens)
    try:
        viewer.login("viewer-orbital")
        viewer.go(f"/findings/{shared.pk}/")
        text = viewer.page.locator("main").inner_text()
        assert "(another tenant)" in text and mine.name in text
        for tenant in others:
            assert tenant.slug not in text and tenant.name not in text, tenant.slug
        assert viewer.page.locator("#accept-form").count() == 0  # viewers read only
        viewer.shot("07-viewer-shared-finding")
    finally:
        viewer.close()
