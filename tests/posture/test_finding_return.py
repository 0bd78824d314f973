"""A finding whose cause goes away and comes back (docs/findings.md, "When a finding comes
back"): the same finding opens again on its id, its history says when it resolved and when it
came back, and a risk acceptance it held when it resolved no longer applies (its fields agree
with its status; the acceptance is kept as an earlier one, and the audit log says why)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from audit.models import AuditEvent
from inventory.models import Cluster
from posture.models import EarlierAcceptance, Finding
from posture.rules.subjects import node_draft
from posture.services import findings_refresh
from tenants.models import Tenant, TrustClass
from tests.conftest import api_client
from tests.posture.builders import gpu_node, inputs

pytestmark = pytest.mark.django_db
DAY0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def day(n: float) -> datetime:
    return DAY0 + timedelta(days=n)


@pytest.fixture
def lab(personas):
    internal = TrustClass.objects.get(slug="internal")
    Tenant.objects.create(slug="a", name="Team A", trust_class=internal)
    return Cluster.objects.create(name="lab")


def draft(node: str = "n1"):
    return node_draft(
        "STACK-004", gpu_node(node), inputs=inputs(), tenants=("a",), evidence={"node": node}
    )


def score(cluster: Cluster, n: float, drafts: list) -> None:
    with time_machine.travel(day(n), tick=False):
        findings_refresh(cluster=cluster, drafts=drafts, now=day(n))


def actions(finding: Finding) -> list[str]:
    rows = AuditEvent.objects.filter(object_type="posture.finding", object_id=str(finding.pk))
    return list(rows.order_by("id").values_list("action", flat=True))


def history_text(user, finding: Finding, n: float) -> str:
    client = Client()
    client.force_login(user)
    with time_machine.travel(day(n), tick=False):
        html = client.get(f"/findings/{finding.pk}/").content.decode()
    section = html.split('id="history"')[1].split("</table>")[0]
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", section))


def accept(user, finding: Finding, n: float, until: str) -> None:
    reason = "pool drained next sprint, tracked in OPS-12"
    with time_machine.travel(day(n), tick=False):
        answer = api_client(user).post(
            f"/api/v1/findings/{finding.pk}/accept/",
            {"reason": reason, "until": until},
            format="json",
        )
    assert answer.status_code == 200, answer.content


def test_its_history_says_when_it_resolved_and_when_it_came_back(lab, personas):
    score(lab, 0, [draft()])
    finding = Finding.objects.get()
    score(lab, 1, [])  # the cause is gone
    score(lab, 2, [draft()])  # and back: the same finding, on its id
    finding.refresh_from_db()
    assert Finding.objects.count() == 1
    assert finding.status == "open" and finding.resolved_at is None
    assert actions(finding) == ["recur"]
    event = AuditEvent.objects.get(action="recur")
    assert event.before["resolved_at"].startswith("2026-12-02")
    text = history_text(personas["security_lead"], finding, 2.1)
    lines = re.findall(r"(2026-12-0\d) \d\d:\d\d (first seen|resolved|back)", text)
    assert lines == [
        ("2026-12-01", "first seen"),
        ("2026-12-02", "resolved"),
        ("2026-12-03", "back"),
    ], text
    # Resolved again: both times it resolved are listed, the last from the row itself.
    score(lab, 3, [])
    text = history_text(personas["security_lead"], finding, 3.1)
    assert re.findall(r"(2026-12-0\d) \d\d:\d\d resolved", text) == ["2026-12-02", "2026-12-04"]


def test_an_acceptance_it_held_when_it_resolved_no_longer_applies_when_it_is_back(lab, personas):
    lead = personas["security_lead"]
    score(lab, 0, [draft()])
    finding = Finding.objects.get()
    accept(lead, finding, 0.5, "2027-01-31")
    score(lab, 1, [])
    score(lab, 2, [draft()])
    with time_machine.travel(day(2.1), tick=False):
        shown = api_client(lead).get(f"/api/v1/findings/{finding.pk}/").json()
    # Open, and nothing says accepted: the acceptance is an earlier one of its own.
    assert shown["status"] == "open"
    assert shown["accepted_until"] is None and shown["accepted_reason"] == ""
    assert shown["reopened"] == ""
    (earlier,) = shown["earlier_acceptances"]
    assert earlier["source"] == finding.pk and earlier["carried"] is False
    assert earlier["until"].startswith("2027-01-31")
    assert earlier["reason"] == "pool drained next sprint, tracked in OPS-12"
    assert actions(finding) == ["accept", "recur", "lapse"]
    lapse = AuditEvent.objects.get(action="lapse")
    assert lapse.before["status"] == "resolved"
    assert lapse.before["accepted_until"].startswith("2027-01-31")
    assert lapse.after["accepted_until"] is None and lapse.after["lapsed"] == "resolved"
    assert lapse.after["resolved_at"].startswith("2026-12-02")
    assert lapse.after["back_at"].startswith("2026-12-03")
    text = history_text(lead, finding, 2.1)
    assert "acceptance until 2027-01-31 no longer applies: resolved on 2026-12-02, back on " in text
    assert text.rstrip().endswith("judged afresh system"), text  # not "risk accepted until"
    client = Client()
    client.force_login(lead)
    with time_machine.travel(day(2.1), tick=False):
        html = client.get(f"/findings/{finding.pk}/").content.decode()
    assert 'id="acceptance-lapsed"' in html and "Acceptances before its subject widened" not in html
    assert "Accepted before on Node n1: pool drained next sprint" in html  # the form, filled


def test_an_acceptance_withdrawn_or_expired_before_it_resolved_does_not_lapse_again(lab, personas):
    lead = personas["security_lead"]
    score(lab, 0, [draft("n1"), draft("n2")])
    withdrawn, expired = Finding.objects.order_by("subject_name")
    accept(lead, withdrawn, 0.5, "2027-01-31")
    accept(lead, expired, 0.5, "2026-12-03")
    with time_machine.travel(day(0.6), tick=False):
        assert api_client(lead).post(f"/api/v1/findings/{withdrawn.pk}/reopen/").status_code == 200
    score(lab, 5, [draft("n1"), draft("n2")])  # the expiry recorded
    score(lab, 6, [])
    score(lab, 7, [draft("n1"), draft("n2")])
    assert actions(withdrawn) == ["accept", "reopen", "recur"]
    assert actions(expired) == ["accept", "expire", "recur"]
    assert not EarlierAcceptance.objects.exists()
    assert set(Finding.objects.values_list("status", flat=True)) == {"open"}


def _resolve_queries(cluster: Cluster, nodes: int) -> int:
    score(cluster, 0, [draft(f"n{i}") for i in range(nodes)])
    with CaptureQueriesContext(connection) as queries:
        score(cluster, 1, [])
    return len(queries)


def test_resolving_many_findings_stays_in_bulk(lab):
    small = _resolve_queries(lab, 5)
    assert _resolve_queries(Cluster.objects.create(name="big"), 60) == small
    assert not AuditEvent.objects.exists()  # the row's resolved_at says when, for now
