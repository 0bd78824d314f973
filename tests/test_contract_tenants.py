"""DESIGN §9: the tenants file's shape is the one the API accepts (POST /api/v1/tenants/),
with `viewers`; DESIGN §10: a tenant change is an audit event."""

from __future__ import annotations

import pytest

from audit.models import AuditEvent
from tenants.models import Tenant
from tests.conftest import api_client

pytestmark = pytest.mark.django_db

GAMMA = {
    "slug": "gamma",
    "name": "Team Gamma",
    "trust_class": "external",
    "namespaces": ["team-gamma"],
    "principals": ["group:gamma-devs", "user:gil@example.com"],
    "viewers": ["viewer-beta"],
}


def test_a_security_lead_declares_a_tenant_in_the_files_shape(small_world, personas):
    client = api_client(personas["security_lead"])
    created = client.post("/api/v1/tenants/", GAMMA, format="json")
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["slug"] == "gamma" and body["trust_class"] == "external"
    assert body["namespaces"] == ["team-gamma"]
    assert sorted(body["principals"]) == ["group:gamma-devs", "user:gil@example.com"]
    assert AuditEvent.objects.filter(object_type="tenants.tenant", action="create").exists()
    # The viewer named in `viewers` now sees gamma.
    seen = api_client(personas["viewer_beta"]).get("/api/v1/tenants/").json()["results"]
    assert "gamma" in [t["slug"] for t in seen]
    again = client.post("/api/v1/tenants/", {**GAMMA, "name": "Gamma Corp"}, format="json")
    assert again.status_code == 200 and again.json()["name"] == "Gamma Corp"


def test_a_whole_tenants_document_is_accepted(small_world, personas):
    client = api_client(personas["security_lead"])
    response = client.post("/api/v1/tenants/", {"tenants": [GAMMA]}, format="json")
    assert response.status_code == 201
    assert response.json()["created"] == ["gamma"]


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({**GAMMA, "trust_class": "vip"}, "unknown trust class 'vip'"),
        ({**GAMMA, "slug": "Not A Slug"}, "slug"),
        ({"tenants": "gamma"}, "tenants"),
    ],
)
def test_a_bad_tenant_is_a_400_saying_why(small_world, personas, body, words):
    response = api_client(personas["security_lead"]).post("/api/v1/tenants/", body, format="json")
    assert response.status_code == 400 and words in response.json()["detail"]
    assert not Tenant.objects.filter(slug="gamma").exists()


@pytest.mark.parametrize("persona", ["platform_engineer", "auditor", "viewer_alpha", "no_role"])
def test_only_a_security_lead_declares_tenants(small_world, personas, persona):
    response = api_client(personas[persona]).post("/api/v1/tenants/", GAMMA, format="json")
    assert response.status_code == 403
    assert not Tenant.objects.filter(slug="gamma").exists()


def test_tenants_are_listed_most_risk_first(small_world, personas):
    from posture.services import posture_evaluate

    alpha = Tenant.objects.get(slug="alpha")
    Tenant.objects.create(slug="aardvark", name="Aardvark", trust_class=alpha.trust_class)
    posture_evaluate()  # scored: no findings, no risk
    rows = api_client(personas["auditor"]).get("/api/v1/tenants/").json()["results"]
    risks = [row["risk"] for row in rows]
    assert len(rows) >= 2 and None not in risks
    assert risks == sorted(risks, reverse=True) and risks[0] > risks[-1]
    assert [row["slug"] for row in rows] != sorted(row["slug"] for row in rows)


def test_tenants_filter_by_the_trust_class_slug_the_field_shows(small_world, personas):
    # DESIGN §8: a filter takes the slug the object shows (`trust_class: "external"`).
    client = api_client(personas["security_lead"])
    client.post("/api/v1/tenants/", GAMMA, format="json")  # gamma: external
    every = client.get("/api/v1/tenants/").json()["results"]
    want = sorted(t["slug"] for t in every if t["trust_class"] == "external")
    assert "gamma" in want and len(want) < len(every)
    external = client.get("/api/v1/tenants/?trust_class=external").json()["results"]
    assert sorted(t["slug"] for t in external) == want
    unknown = client.get("/api/v1/tenants/?trust_class=no_such_class")
    assert unknown.status_code == 400 and "external" in unknown.json()["errors"]["trust_class"][0]
    # The older spelling still works.
    older = client.get("/api/v1/tenants/?trust_class__slug=external").json()["results"]
    assert sorted(t["slug"] for t in older) == want
