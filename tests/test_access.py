"""Scoped: a tenant viewer sees their tenants, and only theirs, on pages and in the API,
through filters too; fleet readers see every tenant (STYLE rules 7 and 10)."""

from __future__ import annotations

import pytest
from django.test import Client

from posture.models import Finding
from tenants.models import Tenant
from tests.conftest import api_client

pytestmark = pytest.mark.django_db

# Who may open which URL, for every URL (generated from the resolver), and that no trace of
# another tenant reaches a tenant viewer: tests/security/test_matrix.py. These check what
# each persona does see.


def slugs(response) -> set[str]:
    return {row["slug"] for row in response.json()["results"]}


def test_tenant_viewer_sees_only_their_tenant_in_the_api(small_world, personas):
    viewer = api_client(personas["viewer_alpha"])
    assert slugs(viewer.get("/api/v1/tenants/")) == {"alpha"}
    findings = viewer.get("/api/v1/findings/").json()["results"]
    assert findings and {slug for f in findings for slug in f["tenants"]} == {"alpha"}
    # A finding shared with beta lists alpha only: the viewer never learns beta's slug.
    shared = Finding.objects.filter(tenants__slug="alpha").filter(tenants__slug="beta")
    assert shared.exists()
    assert {tuple(f["tenants"]) for f in findings if f["id"] in {s.pk for s in shared}} == {
        ("alpha",)
    }
    # Asking for another tenant by filter gives nothing, not even the findings they share:
    # it is refused in the words a tenant that does not exist is.
    refused = viewer.get("/api/v1/findings/?tenant=beta")
    assert refused.status_code == 400 and "results" not in refused.json()
    beta_id = Tenant.objects.get(slug="beta").pk
    assert viewer.get(f"/api/v1/tenants/{beta_id}/posture/").status_code == 404
    beta_finding = Finding.objects.filter(tenants__slug="beta").exclude(tenants__slug="alpha")[0]
    assert viewer.get(f"/api/v1/findings/{beta_finding.pk}/").status_code == 404
    pods = viewer.get("/api/v1/workloads/").json()["results"]
    assert pods and {p["tenant"] for p in pods} == {"alpha"}


def test_security_lead_sees_every_tenant(small_world, personas):
    lead = api_client(personas["security_lead"])
    assert slugs(lead.get("/api/v1/tenants/")) == {"alpha", "beta"}


def test_procurement_sees_no_tenant_posture(small_world, personas):
    procurement = api_client(personas["procurement"])
    assert procurement.get("/api/v1/tenants/").json()["results"] == []
    assert procurement.get("/api/v1/findings/").json()["results"] == []


def test_tenant_viewer_pages_are_scoped(small_world, personas):
    client = Client()
    client.force_login(personas["viewer_alpha"])
    overview = client.get("/").content.decode()
    assert "Team Alpha" in overview and "Beta Corp" not in overview
    assert client.get("/tenants/beta/").status_code == 404
    assert client.get("/tenants/alpha/").status_code == 200
    findings = client.get("/findings/?tenant=beta&status=open").content.decode()
    assert "No findings match" in findings
    other = Client()
    other.force_login(personas["viewer_beta"])
    assert "inference-0" in other.get("/tenants/beta/").content.decode()
    assert "trainer-0" not in other.get("/tenants/beta/").content.decode()
