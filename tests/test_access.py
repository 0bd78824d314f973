"""Private by default, and scoped: every URL needs a login; a tenant viewer sees only their
tenants, on pages and in the API, through filters too (STYLE rules 7 and 10)."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from posture.models import Finding
from tests.conftest import api_client

pytestmark = pytest.mark.django_db

PUBLIC = {"/healthz", "/readyz", "/admin/login/"}
# allauth's own pages that must answer anonymous visitors (login, password reset, ...).
PUBLIC_PREFIXES = ("/accounts/",)
ROLES_THAT_READ_ALL = ("security_lead", "platform_engineer", "auditor")
API_LISTS = [
    "/api/v1/trust-classes/",
    "/api/v1/tenants/",
    "/api/v1/clusters/",
    "/api/v1/sync-runs/",
    "/api/v1/drift-events/",
    "/api/v1/nodes/",
    "/api/v1/workloads/",
    "/api/v1/findings/",
    "/api/v1/checks/",
    "/api/v1/findings/export/?format=csv",
    "/api/v1/bulletins/",
    "/api/v1/bulletin-imports/",
    "/api/v1/patch-sla/",
    "/api/v1/utilisation/",
    "/api/v1/reset-attestations/",
    "/api/v1/audit-events/",
    "/api/v1/sharing-requests/",
    "/api/v1/providers/",
    "/api/v1/questionnaires/",
    "/api/v1/assessments/",
]
# Endpoints only some roles may read; the others get a 403, not an empty list.
READERS = {
    "/api/v1/audit-events/": {"security_lead", "auditor"},
}


WRITERS = {
    "/api/v1/clusters/": {"platform_engineer"},
    "/api/v1/bulletins/": {"security_lead", "platform_engineer"},
    "/api/v1/reset-attestations/": {"security_lead", "platform_engineer"},
    # Owners of a tenant (its viewers) ask for sharing modes too.
    "/api/v1/sharing-requests/": {"platform_engineer", "viewer_alpha"},
    "/api/v1/providers/": {"procurement"},
    "/api/v1/assessments/": {"procurement"},
}


def parameterless_urls(resolver: URLResolver | None = None, prefix: str = "") -> list[str]:
    """Every URL of the project that takes no parameter."""
    urls = []
    for entry in (resolver or get_resolver()).url_patterns:
        route = prefix + str(entry.pattern)
        if "<" in route or "(?P" in route:
            continue
        if isinstance(entry, URLResolver):
            urls.extend(parameterless_urls(entry, route))
        elif isinstance(entry, URLPattern):
            cleaned = route.replace("^", "").replace("$", "").replace("\\Z", "")
            path = "/" + cleaned.replace("\\.", ".")
            urls.append(path)
    return sorted(set(urls))


def test_anonymous_crawl_gets_login_redirect_401_or_403(small_world):
    client = Client()
    urls = parameterless_urls()
    checked = 0
    for url in urls:
        if url in PUBLIC or url.startswith(PUBLIC_PREFIXES):
            continue
        response = client.get(url)
        assert response.status_code in (302, 401, 403), url
        if response.status_code == 302:
            assert "/login/" in response["Location"], url
        checked += 1
    assert checked >= 10  # pages, API lists, schema, docs, admin


def test_public_urls_say_nothing_private():
    client = Client()
    assert client.get("/healthz").json() == {"status": "ok"}
    assert client.get("/accounts/login/").status_code == 200


@pytest.mark.parametrize("url", API_LISTS)
def test_api_list_permission_matrix(small_world, personas, url):
    assert api_client(None).get(url).status_code in (401, 403)
    assert api_client(personas["no_role"]).get(url).status_code == 403
    readers = READERS.get(url, {*ROLES_THAT_READ_ALL, "viewer_alpha"})
    restricted = ("procurement",) if url in READERS else ()
    for role in (*ROLES_THAT_READ_ALL, "viewer_alpha", *restricted):
        code = api_client(personas[role]).get(url).status_code
        assert code == (200 if role in readers else 403), (role, code)
    # Writes: only the roles the endpoint names get past permissions (then a 400 for {}).
    writers = WRITERS.get(url, set())
    for persona in ("security_lead", "platform_engineer", "auditor", "procurement", "viewer_alpha"):
        code = api_client(personas[persona]).post(url, {}, format="json").status_code
        assert code == 400 if persona in writers else code in (403, 405), (persona, code)


def slugs(response) -> set[str]:
    return {row["slug"] for row in response.json()["results"]}


def test_tenant_viewer_sees_only_their_tenant_in_the_api(small_world, personas):
    viewer = api_client(personas["viewer_alpha"])
    assert slugs(viewer.get("/api/v1/tenants/")) == {"alpha"}
    findings = viewer.get("/api/v1/findings/").json()["results"]
    assert findings and {f["tenant"] for f in findings} == {"alpha"}
    # Asking for another tenant by filter gives nothing, not their data.
    assert viewer.get("/api/v1/findings/?tenant=beta").json()["results"] == []
    beta_id = Finding.objects.filter(tenant__slug="beta").values_list("tenant_id", flat=True)[0]
    assert viewer.get(f"/api/v1/tenants/{beta_id}/posture/").status_code == 404
    beta_finding = Finding.objects.filter(tenant__slug="beta").first()
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
