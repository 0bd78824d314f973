"""The audit log reads as words: labels for fields, "not set" for null, dates in UTC, a filled
"N days", and no stray slash before a cluster-scoped object (red-team rtpages item 4)."""

from __future__ import annotations

import pytest
from django.test import Client

from audit.services import audit_record
from posture.models import Finding

pytestmark = pytest.mark.django_db


def audit_page(user, url: str = "/audit/") -> str:
    client = Client()
    client.force_login(user)
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


def test_acceptance_change_reads_as_words(small_world, personas):
    finding = Finding.objects.first()
    audit_record(
        actor=personas["security_lead"],
        action="update",
        obj=finding,
        before={"accepted_until": None, "owner": None},
        after={"accepted_until": "2027-01-20T06:51:15.773650+00:00", "owner": "plat"},
    )
    html = audit_page(personas["auditor"])
    row = html.split('id="event-')[1].split("</tr>")[0]
    assert "accepted until</span>: <del>not set</del> → <ins>2027-01-20 06:51 UTC</ins>" in row
    assert "<del>not set</del> → <ins>plat</ins>" in row
    assert "null" not in row and "&quot;" not in row


def test_cluster_scoped_subject_has_no_stray_slash(small_world):
    finding = Finding(check_id="STACK-005", subject_kind="Node", subject_name="gke-a")
    assert str(finding) == "STACK-005 Node gke-a"
    finding.subject_namespace = "ml"
    finding.subject_kind = "Pod"
    assert str(finding) == "STACK-005 Pod ml/gke-a"


def test_subscription_names_its_days(personas):
    from notifications.models import EventKind, Subscription

    sub = Subscription.objects.create(
        user=personas["auditor"], kind=EventKind.ACCEPTANCE_EXPIRING, days=14
    )
    audit_record(actor=personas["auditor"], action="create", obj=sub, after={"days": 14})
    html = audit_page(personas["auditor"], "/home/")
    assert "Risk acceptance expiring within 14 days" in html
    assert "N days" not in html
