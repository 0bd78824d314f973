"""A new user's walk through every main page of the demo, in a real browser: no console error,
no request leaving the machine, a screenshot of each page; then a filter, a sharing request
approved by a second platform engineer, and a questionnaire answer filled and submitted."""

from __future__ import annotations

import pytest

from tests.browser.conftest import Watched

pytestmark = pytest.mark.django_db(transaction=True)

# (screenshot name, path) for a security lead: the pages DESIGN §1's users come to.
MAIN_PAGES = [
    ("overview", "/"),
    ("tenant-posture", "/tenants/clinical/"),
    ("findings", "/findings/"),
    ("checks", "/checks/"),
    ("check-detail", "/checks/SHARE-001/"),
    ("clusters", "/clusters/"),
    ("cluster", "/clusters/prod-east/"),
    ("nodes", "/nodes/"),
    ("node", "/nodes/prod-east/pe-h100-01/"),
    ("patch-status", "/patch/"),
    ("utilisation", "/utilisation/"),
    ("sharing-requests", "/sharing-requests/"),
    ("approvals", "/approvals/"),
    ("providers", "/providers/"),
    ("provider", "/providers/nimbus-gpu/"),
    ("provider-compare", "/providers/compare/?providers=nimbus-gpu&providers=stratus-compute"),
    ("mig-partitioner", "/mig/?cluster=prod-east&node=pe-h100-01"),
    ("bulletins", "/bulletins/"),
    ("audit-log", "/audit/"),
]
NARROW = ["/", "/findings/", "/tenants/clinical/", "/providers/"]


def test_a_new_users_walk(demo_world, chromium, live_server, screens):
    """One test, so the demo world is loaded once (a minute): each step is a function below."""
    walk_every_main_page(chromium, live_server.url, screens)
    filter_findings(chromium, live_server.url, screens)
    second_engineer_approves_a_sharing_request(chromium, live_server.url, screens)
    procurement_fills_and_submits_an_answer(chromium, live_server.url, screens)


def walk_every_main_page(chromium, url: str, screens) -> None:
    lead = Watched(chromium, url, screens)
    try:
        lead.login("security-lead")
        for name, path in MAIN_PAGES:
            lead.go(path)
            assert lead.page.locator("h1").count() == 1, path
            assert lead.page.locator("nav[aria-label=Main] a").count() >= 10, path
            lead.shot(name)
        # Tables sort by a column from their header.
        lead.go("/nodes/")
        header = lead.page.locator("table.data th button.sort").first
        header.click()
        assert lead.page.locator("table.data th[aria-sort]").count() == 1
        lead.check()
    finally:
        lead.close()
    narrow = Watched(chromium, url, screens, width=390)
    try:
        narrow.login("auditor")
        for path in NARROW:
            narrow.go(path)
            width = narrow.page.evaluate("document.documentElement.scrollWidth")
            assert width <= 400, f"{path} is {width}px wide on a 390px screen"
            narrow.shot("narrow" + path.replace("/", "-").rstrip("-"))
    finally:
        narrow.close()


def filter_findings(chromium, url: str, screens) -> None:
    lead = Watched(chromium, url, screens)
    try:
        lead.login("security-lead")
        lead.go("/findings/")
        lead.page.select_option("select[name=severity]", "critical")
        lead.page.click("form.filters button[type=submit]")
        lead.page.wait_for_load_state("networkidle")
        lead.check()
        assert "severity=critical" in lead.page.url
        badges = lead.page.locator("table.data tbody .sev")
        assert badges.count() > 0
        assert set(badges.all_inner_texts()) == {"critical"}
        lead.shot("findings-critical")
    finally:
        lead.close()


def second_engineer_approves_a_sharing_request(chromium, url: str, screens) -> None:
    from tenants.models import SharingRequest

    asked = SharingRequest.objects.filter(
        status="pending", requested_by__username="platform-engineer"
    ).first()
    requester = Watched(chromium, url, screens)
    try:
        requester.login("platform-engineer")
        requester.go(f"/sharing-requests/{asked.pk}/")
        assert requester.page.locator("button[value=approve]").count() == 0  # four eyes
        assert "another platform engineer must decide it" in requester.page.content()
    finally:
        requester.close()
    second = Watched(chromium, url, screens)
    try:
        second.login("platform-engineer-2")
        second.go("/approvals/")
        second.shot("approvals-queue")
        second.page.click(f"a[href='/sharing-requests/{asked.pk}/']")
        second.page.wait_for_load_state("networkidle")
        second.page.fill("textarea[name=reason]", "Fixed-share vGPU keeps the dashboards apart.")
        second.page.click("button[value=approve]")
        second.page.wait_for_load_state("networkidle")
        second.check()
        assert "approve recorded" in second.page.content()
        second.shot("sharing-request-approved")
    finally:
        second.close()
    asked.refresh_from_db()
    assert (asked.status, asked.decided_by.username) == ("approved", "platform-engineer-2")


def procurement_fills_and_submits_an_answer(chromium, url: str, screens) -> None:
    from providers.models import Assessment

    draft = Assessment.objects.get(provider__slug="helio-gpu", status="draft")
    buyer = Watched(chromium, url, screens)
    try:
        buyer.login("procurement")
        buyer.go(f"/assessments/{draft.pk}/")
        buyer.page.select_option("select[name='value-GPU-PART-01']", "mig_gi")
        status = buyer.page.locator("[data-status-for='GPU-PART-01']")
        status.filter(has_text="saved").wait_for(timeout=10_000)
        assert status.inner_text() == "saved"
        buyer.page.fill("textarea[name='note-GPU-PART-01']", "MIG 3g.40gb per customer since 2026.")
        buyer.page.click("button[name=then][value=submit]")
        buyer.page.wait_for_load_state("networkidle")
        buyer.check()
        page = buyer.page.content()
        # The note may reach the server by autosave (on blur) before the form does: then the
        # Save reports that every answer was already saved, never a count it did not save.
        assert "answer(s) saved" in page or "every answer was already saved" in page
        assert "Not ready to submit" in page  # the draft still has unanswered questions
        buyer.shot("assessment-answer-saved")
    finally:
        buyer.close()
    answer = draft.answers.get(question_id="GPU-PART-01")
    assert (answer.value, answer.note) == ("mig_gi", "MIG 3g.40gb per customer since 2026.")
