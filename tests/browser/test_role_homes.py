"""Every role signs in and lands on its own home (issue 19 item 6), in a real browser: the
page it lands on, the menu it gets, and a refused page that keeps the layout. Screenshots go to
var/screenshots/<test>/; the readme-*.png ones (one screen, 1280x800) are the README's."""

from __future__ import annotations

import re

import pytest

from tests.browser.conftest import Watched

pytestmark = pytest.mark.django_db(transaction=True)

# (login, what its home says, menu entries it must have, menu entries it must not have)
HOMES = [
    ("security-lead", "Tenants by risk", {"Overview", "Findings", "Audit log"}, set()),
    (
        "platform-engineer",
        "Sharing requests waiting for a decision",
        {"Approvals", "Patching"},
        {"Audit log", "Providers"},
    ),
    ("procurement", "Provider questionnaires", {"Providers"}, {"Findings", "Approvals", "Nodes"}),
    ("auditor", "Latest audit events", {"Audit log", "Frameworks"}, {"MIG"}),
    (
        "viewer-orbital",
        "Orbital Genomics",
        {"Tenants", "Findings"},
        {"Audit log", "Approvals", "Nodes", "Clusters"},
    ),
]


def test_every_role_has_its_own_day(demo_world, chromium, live_server, screens):
    """One test, so the demo world is loaded once: each step is a function below."""
    each_role_lands_on_its_home(chromium, live_server.url, screens)
    tenant_viewer_reads_only_their_posture(chromium, live_server.url, screens)
    security_lead_lists_tenants_and_reads_the_checklist(chromium, live_server.url, screens)
    auditor_traces_an_approval(chromium, live_server.url, screens)


def each_role_lands_on_its_home(chromium, url: str, screens) -> None:
    signed_out = Watched(chromium, url, screens, height=800)
    try:
        signed_out.go("/accounts/login/")
        assert signed_out.page.title() == "Sign In · gpuposture"
        assert signed_out.page.get_by_text("sign up").count() == 0
        signed_out.shot("sign-in")
    finally:
        signed_out.close()
    for login, says, has, lacks in HOMES:
        user = Watched(chromium, url, screens, height=800)
        try:
            user.login(login)
            assert user.page.url.endswith("/home/"), (login, user.page.url)
            assert user.page.get_by_text(says).count() >= 1, (login, says)
            entries = set(user.page.locator("nav[aria-label=Main] a").all_inner_texts())
            assert has <= entries and not lacks & entries, (login, entries)
            assert "gpuposture · gpuposture" not in user.page.title()
            user.shot(f"home-{login}")
            user.page.screenshot(path=str(screens / f"readme-home-{login}.png"))
        finally:
            user.close()


def tenant_viewer_reads_only_their_posture(chromium, url: str, screens) -> None:
    viewer = Watched(chromium, url, screens, height=800)
    try:
        viewer.login("viewer-orbital")
        heading = viewer.page.locator("h1").inner_text()
        assert "Orbital Genomics" in heading
        viewer.go("/tenants/")
        rows = viewer.page.locator("#tenants tbody tr")
        assert rows.count() == 1 and "Orbital" in rows.first.inner_text()
        viewer.shot("tenants")
        # A page the role may not open: the layout, the reason, what to do.
        response = viewer.page.goto(viewer.base_url + "/audit/")
        assert response is not None and response.status == 403
        assert viewer.page.locator("nav[aria-label=Main]").count() == 1
        assert viewer.page.get_by_text("What to do").count() == 1
        viewer.shot("forbidden")
    finally:
        viewer.close()


def security_lead_lists_tenants_and_reads_the_checklist(chromium, url: str, screens) -> None:
    lead = Watched(chromium, url, screens, height=800)
    try:
        lead.login("security-lead")
        lead.go("/tenants/?sort=findings")
        assert lead.page.locator("#tenants tbody tr").count() >= 5
        lead.page.screenshot(path=str(screens / "readme-tenants.png"))
        lead.go("/clusters/prod-east/")
        checklist = lead.page.locator("section", has_text="Practitioner checklist")
        assert "MIG GPU instance" in checklist.inner_text()
        lead.shot("cluster-checklist")
        lead.go("/")
        lead.page.screenshot(path=str(screens / "readme-overview.png"))
    finally:
        lead.close()


def auditor_traces_an_approval(chromium, url: str, screens) -> None:
    """From the auditor's home to who approved a sharing request: names, never ids."""
    auditor = Watched(chromium, url, screens, height=800)
    try:
        auditor.login("auditor")
        auditor.page.click("#home-events >> text=The whole audit log")
        auditor.page.wait_for_load_state("networkidle")
        auditor.page.fill("input[name=action]", "approve")
        auditor.page.click("form.filters button[type=submit]")
        auditor.page.wait_for_load_state("networkidle")
        rows = auditor.page.locator("table.data tbody tr")
        assert rows.count() >= 1
        first = rows.first.inner_text()
        # decided by: the approver's username, not their numeric id, in words (no JSON null)
        assert re.search(r"decided by: not set → platform-engineer", first), first
        assert "null" not in first, first
        auditor.check()
        auditor.shot("audit-approvals")
    finally:
        auditor.close()
