"""Two personas' days in a real browser (issue 19): procurement fills a draft assessment,
attaches evidence (a file that lies about its type refused, by question and name; the wrong
file removed) and submits it; a platform engineer decides a sharing request seeing what it
would cover (the nodes, the other tenants there and their classes, open findings, earlier
requests). Screenshots in var/screenshots/<test>/."""

from __future__ import annotations

import re

import pytest

from tests.browser.conftest import Watched

pytestmark = pytest.mark.django_db(transaction=True)

PDF = b"%PDF-1.7\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n"


def view(watched: Watched, name: str, locator) -> None:
    """A screenshot of the screen around `locator` (the assessment is too long to read whole)."""
    locator.scroll_into_view_if_needed()
    watched.folder.mkdir(parents=True, exist_ok=True)
    watched.page.screenshot(path=str(watched.folder / f"{name}.png"))


@pytest.fixture
def private_uploads(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "uploads")


def test_procurement_and_platform_engineer_days(
    private_uploads, demo_world, chromium, live_server, screens
):
    """One test, so the demo world is loaded once (a minute): each persona is a function."""
    procurement_fills_attaches_and_submits(chromium, live_server.url, screens)
    platform_engineer_decides_with_context(chromium, live_server.url, screens)
    numbers_that_agree(chromium, live_server.url, screens)


def procurement_fills_attaches_and_submits(chromium, url: str, screens) -> None:
    from audit.models import AuditEvent
    from providers.models import Assessment

    draft = Assessment.objects.get(provider__slug="helio-gpu", status="draft")
    buyer = Watched(chromium, url, screens)
    page = buyer.page
    try:
        buyer.login("procurement")
        buyer.go(f"/assessments/{draft.pk}/")
        heading = page.locator("#score-h").inner_text()
        assert re.search(r"provisional, \d+ of 46 answered", heading), heading
        assert not re.search(r"\d+/100", heading)
        view(buyer, "1-draft-provisional", page.locator("#score-h"))

        # The demo's attached procedure was the wrong document: remove it (audited).
        view(buyer, "1b-evidence-file", page.locator("#q-GPU-WIPE-01"))
        page.locator("button[form^=evidence-remove-]").first.click()
        page.wait_for_load_state("networkidle")
        assert "helio-memory-scrub-procedure.txt' removed" in page.content()
        assert AuditEvent.objects.filter(action="detach").exists()

        _answer_every_question(page)
        page.fill("#id_responder_name", "Marta Quist")
        page.fill("#id_responder_email", "sales@helio-gpu.example")
        page.fill("#id_responded_on", "2026-11-30")
        note = page.locator("textarea[name='note-GPU-PART-01']")
        short = note.bounding_box()["height"]
        note.fill("MIG 3g.40gb per customer since 2026.\n" * 6)
        assert note.bounding_box()["height"] > short * 2  # the note grows with its text
        view(buyer, "1c-note-grows", note)
        # A text file named .pdf is refused, naming the question and the file; the rest saves.
        page.set_input_files(
            "#file-GPU-WIPE-01",
            files=[
                {"name": "scrub-report.pdf", "mimeType": "application/pdf", "buffer": b"not a pdf"},
            ],
        )
        page.get_by_role("button", name="Save", exact=True).click()
        page.wait_for_load_state("networkidle")
        assert "GPU-WIPE-01: file 'scrub-report.pdf' was not attached" in page.content()
        assert "the content is text, not a PDF" in page.content()
        assert re.search(r"\d+ answer\(s\) saved", page.content())
        view(buyer, "2-upload-refused", page.locator("ul.messages"))

        page.set_input_files(
            "#file-GPU-WIPE-01",
            files=[
                {"name": "scrub-report.pdf", "mimeType": "application/pdf", "buffer": PDF},
            ],
        )
        page.click("button[name=then][value=submit]")
        page.wait_for_load_state("networkidle")
        buyer.check()
        content = page.content()
        assert "1 file(s) attached; every answer was already saved." in content
        assert "Submitted: a security lead will review it." in content, content[:3000]
        assert page.locator("#score-h").inner_text().strip().endswith("/100")
        view(buyer, "3-submitted", page.locator("ul.messages"))
    finally:
        buyer.close()
    draft.refresh_from_db()
    assert draft.status == "submitted"
    answer = draft.answers.get(question_id="GPU-WIPE-01")
    assert [f.original_name for f in answer.files.all()] == ["scrub-report.pdf"]


def _answer_every_question(page) -> None:
    """What a buyer copies from the provider's written answer: every question answered, an
    evidence link wherever one is required."""
    for article in page.locator("article.question").all():
        qid = article.get_attribute("id").removeprefix("q-")
        select = article.locator(f"select[name='value-{qid}']")
        if select.count():
            if not select.input_value():
                select.select_option(index=1)
        elif article.locator(f"input[type=radio][name='value-{qid}']").count():
            if not article.locator(f"input[name='value-{qid}']:checked").count():
                article.locator(f"input[name='value-{qid}'][value=yes]").check()
        elif article.locator(f"input[type=number][name='value-{qid}']").count():
            number = article.locator(f"input[name='value-{qid}']")
            if not number.input_value():
                number.fill("7")
        else:
            text = article.locator(f"textarea[name='value-{qid}']")
            if not text.input_value():
                text.fill("Described in section 4 of the provider's security whitepaper.")
        if "evidence required" in article.locator("header").inner_text():
            link = article.locator(f"input[name='evidence_url-{qid}']")
            if not link.input_value():
                link.fill(f"https://helio-gpu.example/trust/{qid.lower()}.pdf")


def platform_engineer_decides_with_context(chromium, url: str, screens) -> None:
    from tenants.models import SharingRequest

    asked = SharingRequest.objects.get(
        status="pending", tenant__slug="analytics", requested_by__username="platform-engineer"
    )
    second = Watched(chromium, url, screens)
    page = second.page
    try:
        second.login("platform-engineer-2")
        second.go("/approvals/")
        page.click(f"a[href='/sharing-requests/{asked.pk}/']")
        page.wait_for_load_state("networkidle")
        second.check()
        context = page.locator("section.request-context")
        assert context.count() == 1
        text = context.inner_text()
        assert "GPU nodes in cluster neo-west" in text
        assert page.locator("section.request-context table").count() == 4
        # The neighbours whose class forbids vGPU come first, in red, with the rule.
        first = context.locator("table").nth(1).locator("tbody tr").first
        assert "forbidden" in first.inner_text()
        assert "external" in first.inner_text()
        assert "Open findings there" in text
        assert "Earlier requests of analytics" in text
        second.shot("4-request-with-context")
        page.fill(
            "textarea[name=reason]",
            "External tenants kestrel and orbital share these "
            "nodes; their class forbids vGPU. Ask for a dedicated pool.",
        )
        page.click("button[value=deny]")
        page.wait_for_load_state("networkidle")
        second.check()
        assert "deny recorded" in page.content()
        second.shot("5-request-denied")
    finally:
        second.close()
    asked.refresh_from_db()
    assert (asked.status, asked.decided_by.username) == ("denied", "platform-engineer-2")


def numbers_that_agree(chromium, url: str, screens) -> None:
    """On the demo world: clinical runs only on MIG (the chart once showed ~130 GPU-hours and
    the table 0.0); STACK-002 is high in the catalogue and critical on its findings; the CPU
    nodes have no GPU facts to be unknown."""
    lead = Watched(chromium, url, screens)
    page = lead.page
    try:
        lead.login("security-lead")
        lead.go("/utilisation/")
        # The chart's legend and the table name tenants by name; the row is found by slug.
        row = page.locator("tr[data-tenant=clinical]")
        name = row.locator("td").first.inner_text().strip()
        charted = page.evaluate(
            "name => JSON.parse(document.getElementById('hours-chart').textContent).data"
            ".filter(t => t.name === name)[0].y.reduce((a, b) => a + b, 0)",
            name,
        )
        tabled = float(row.locator("td[data-hours]").inner_text())
        assert charted > 100 and abs(charted - tabled) < 0.1, (charted, tabled)
        busy = page.locator("h2:text-is('Busiest GPUs') + table tbody tr td:last-child")
        assert all(float(v) > 0 for v in busy.all_inner_texts())
        lead.shot("6-utilisation")
        lead.go("/checks/STACK-002/")
        rule = page.locator("p.severity-rule").inner_text()
        assert "worst severity the vendor bulletins give" in rule and "critical" in rule
        view(lead, "7-check-severity-per-finding", page.locator("h1"))
        lead.go("/nodes/prod-east/pe-cpu-01/")
        assert page.locator(".unknown").count() == 0
        assert "A CPU node" in page.locator("main").inner_text()
        lead.shot("8-cpu-node")
    finally:
        lead.close()
