"""DESIGN §8: a finding's JSON carries `risk`, the risk points it adds to the tenants it
affects (as the score counts them, DESIGN §6); a tenant viewer sees their own tenants' part."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from tests.conftest import api_client

pytestmark = pytest.mark.django_db


def _contributions(client) -> dict[str, dict[int, float]]:
    """tenant slug -> finding id -> points, from each tenant's posture."""
    found = {}
    for tenant in client.get("/api/v1/tenants/").json()["results"]:
        posture = client.get(f"/api/v1/tenants/{tenant['id']}/posture/").json()
        found[tenant["slug"]] = {c["finding_id"]: c["points"] for c in posture["contributions"]}
    return found


def test_an_open_findings_risk_is_the_points_it_adds_to_each_tenant(small_world, personas):
    client = api_client(personas["security_lead"])
    points = _contributions(client)
    rows = client.get("/api/v1/findings/?status=open&page_size=500").json()["results"]
    assert rows and all(isinstance(row["risk"], float) for row in rows)
    for row in rows:
        expected = sum(points[slug].get(row["id"], 0) for slug in row["tenants"])
        assert row["risk"] == pytest.approx(expected, abs=0.01), row["check"]
        assert row["risk"] > 0
        detail = client.get(f"/api/v1/findings/{row['id']}/").json()
        assert detail["risk"] == row["risk"]
    shared = [row for row in rows if set(row["tenants"]) == {"alpha", "beta"}]
    assert shared, "the small world time-slices alpha with beta"


def test_a_viewer_sees_the_risk_their_own_tenant_carries(small_world, personas):
    points = _contributions(api_client(personas["security_lead"]))["alpha"]
    client = api_client(personas["viewer_alpha"])
    rows = client.get("/api/v1/findings/?status=open&page_size=500").json()["results"]
    assert rows
    for row in rows:
        assert row["tenants"] == ["alpha"]
        assert row["risk"] == pytest.approx(points[row["id"]], abs=0.01)
        assert client.get(f"/api/v1/findings/{row['id']}/").json()["risk"] == row["risk"]
    alpha = client.get("/api/v1/tenants/?slug=alpha").json()["results"][0]
    assert sum(row["risk"] for row in rows) == pytest.approx(alpha["risk"], abs=0.05)


def test_an_accepted_finding_adds_no_risk(small_world, personas):
    client = api_client(personas["security_lead"])
    row = client.get("/api/v1/findings/?status=open&severity=critical").json()["results"][0]
    until = (timezone.now() + timedelta(days=30)).isoformat()
    accepted = client.post(
        f"/api/v1/findings/{row['id']}/accept/",
        {"reason": "lab cluster, no customer data", "until": until},
    )
    assert accepted.status_code == 200, accepted.content
    assert accepted.json()["status"] == "accepted" and accepted.json()["risk"] == 0
    listed = client.get(f"/api/v1/findings/?status=accepted&check={row['check']}").json()
    assert [r["risk"] for r in listed["results"] if r["id"] == row["id"]] == [0]


def test_the_json_export_carries_the_risk(small_world, personas):
    client = api_client(personas["security_lead"])
    listed = client.get("/api/v1/findings/?status=open&page_size=500").json()["results"]
    exported = client.get("/api/v1/findings/export/?format=json&status=open")
    rows = json.loads(b"".join(exported.streaming_content))
    assert {r["id"]: r["risk"] for r in rows} == {r["id"]: r["risk"] for r in listed}
