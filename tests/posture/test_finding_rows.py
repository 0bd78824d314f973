"""The findings list and export read rows with values(), not the ModelSerializer: the rows
must be exactly what FindingSerializer writes, for every field, every finding and every
viewer (redaction included)."""

from __future__ import annotations

import json
from datetime import timedelta

from django.utils import timezone

from inventory.presenter import hidden_scope_for
from posture.finding_rows import finding_rows, finding_values
from posture.models import Finding
from posture.serializers import FindingSerializer
from posture.services import finding_accept
from tests.conftest import api_client, content


def _serialized(user) -> list[dict]:
    findings = (
        Finding.objects.visible_to(user).select_related("cluster").prefetch_related("tenants")
    )
    context = {"hidden_scope": hidden_scope_for(user)}
    return [dict(FindingSerializer(f, context=context).data) for f in findings.order_by("id")]


def _rows(user) -> list[dict]:
    values = finding_values(Finding.objects.visible_to(user).order_by("id"))
    return finding_rows(values, hidden_scope_for(user))


def test_rows_equal_the_serializer_for_every_viewer(small_world, personas):
    finding = Finding.objects.filter(tenants__isnull=False).order_by("id").first()
    finding_accept(
        finding=finding,
        user=personas["security_lead"],
        reason="accepted for the row comparison",
        until=timezone.now() + timedelta(days=7),
    )
    # A cluster-wide finding (no tenant), resolved: the null paths of the row.
    Finding.objects.create(
        cluster=finding.cluster,
        check_id="STACK-001",
        severity="high",
        status="resolved",
        subject_kind="Node",
        subject_name="gpu-node-1",
        fingerprint="row-test",
        title="cluster-wide, resolved",
        evidence={"driver": "550.90.07"},
        first_seen=timezone.now() - timedelta(days=3),
        last_seen=timezone.now() - timedelta(days=1),
        resolved_at=timezone.now(),
    )
    for persona in ("security_lead", "viewer_alpha", "auditor"):
        user = personas[persona]
        expected, rows = _serialized(user), _rows(user)
        assert rows and rows == expected, persona
        assert [list(r) for r in rows] == [list(e) for e in expected], "field order"
    accepted = next(r for r in _rows(personas["security_lead"]) if r["id"] == finding.pk)
    assert accepted["status"] == "accepted" and accepted["accepted_until"].endswith("Z")


def test_api_list_and_export_use_the_same_rows(small_world, personas):
    client = api_client(personas["viewer_alpha"])
    listed = client.get("/api/v1/findings/?page_size=500").json()["results"]
    exported = json.loads(content(client.get("/api/v1/findings/export/?format=json")))
    expected = _serialized(personas["viewer_alpha"])
    assert sorted(listed, key=lambda r: r["id"]) == expected == exported
    assert all("beta" not in str(r) for r in listed)
