"""The overview and the findings API are built once per change of what they show for the
readers of every tenant, and never cached for a tenant viewer."""

from __future__ import annotations

import re
from datetime import timedelta

from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from posture.models import Finding
from posture.services import finding_accept, posture_evaluate
from tenants.models import Tenant
from tests.conftest import api_client


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _overview(client: Client) -> str:
    response = client.get("/")
    assert response.status_code == 200
    return response.content.decode()


def test_a_second_reader_gets_the_cached_page_until_something_changes(small_world, personas):
    lead, auditor = _client(personas["security_lead"]), _client(personas["auditor"])
    first = _overview(lead)
    assert "Team Alpha" in first
    with CaptureQueriesContext(connection) as cold:
        _overview(_client(personas["platform_engineer"]))
    # Same version, another reader: the body comes from the cache.
    Tenant.objects.filter(slug="alpha").update(name="Renamed Without Audit")
    with CaptureQueriesContext(connection) as warm:
        cached = _overview(auditor)
    assert "Team Alpha" in cached and "Renamed Without Audit" not in cached
    # + the sweep for what expired that a read makes first where no worker runs (5 queries,
    # Celery eager as here: posture.rescore.rescore_expired_when_eager).
    assert len(warm.captured_queries) <= 6 + 5 < len(cold.captured_queries)
    # A posture run moves the version: the page is rendered again.
    posture_evaluate()
    assert "Renamed Without Audit" in _overview(auditor)


def test_an_acceptance_shows_at_once(small_world, personas):
    lead = _client(personas["security_lead"])
    finding = Finding.objects.filter(status="open", tenants__slug="alpha").order_by("id").first()
    before = _alpha_row(_overview(lead))
    finding_accept(
        finding=finding,
        user=personas["security_lead"],
        reason="a risk we accept for a week",
        until=timezone.now() + timedelta(days=7),
    )
    after = _alpha_row(_overview(lead))
    severities = list(
        Finding.objects.filter(status="open", tenants__slug="alpha").values_list(
            "severity", flat=True
        )
    )
    assert after != before
    for severity in set(severities):
        assert f"{severities.count(severity)} {severity}" in after


def _alpha_row(page: str) -> str:
    """The tenants table's row for alpha (the first row linking to it)."""
    rows = re.findall(r"<tr>(.*?)</tr>", page, re.S)
    return next(row for row in rows if 'href="/tenants/alpha/"' in row)


def test_a_tenant_viewer_is_never_served_a_cached_page(small_world, personas):
    viewer = personas["viewer_alpha"]
    client = _client(viewer)
    assert "Team Alpha" in _overview(client)
    # Removed from the tenant outside the services: no audit event, no new run.
    Tenant.objects.get(slug="alpha").viewers.remove(viewer)
    assert "Team Alpha" not in _overview(client)


def test_the_cache_can_be_turned_off(small_world, personas, settings):
    settings.GPUPOSTURE_READ_CACHE_SECONDS = 0
    lead = _client(personas["security_lead"])
    assert "Team Alpha" in _overview(lead)
    Tenant.objects.filter(slug="alpha").update(name="Renamed Without Audit")
    assert "Renamed Without Audit" in _overview(lead)


def test_findings_api_is_shared_until_an_acceptance(small_world, personas):
    lead, auditor = api_client(personas["security_lead"]), api_client(personas["auditor"])
    url = "/api/v1/findings/?tenant=alpha&status=open"
    first = lead.get(url).json()
    assert first["count"] > 0
    with CaptureQueriesContext(connection) as warm:
        again = auditor.get(url).json()
    assert again == first
    # Authentication, roles, the sweep for lapsed acceptances (where no worker runs: Celery
    # eager, as here) and the version (which reads the latest acceptance expiry already
    # passed, over accepted findings only): nothing of the findings themselves.
    reads = [q["sql"] for q in warm.captured_queries if "posture_finding" in q["sql"]]
    assert len(reads) == 2 and "MAX(accepted_until)" in reads[1]
    assert reads[0].startswith('SELECT "posture_finding"."cluster_id"')  # lapsed, by cluster
    finding_id = first["results"][0]["id"]
    accepted = lead.post(
        f"/api/v1/findings/{finding_id}/accept/",
        {"reason": "accepted while the fix rolls out", "until": timezone.now() + timedelta(days=5)},
        format="json",
    )
    assert accepted.status_code == 200
    after = auditor.get(url).json()
    assert after["count"] == first["count"] - 1
    assert finding_id not in [row["id"] for row in after["results"]]
    # Another filter is another entry: it does not get this one's rows.
    assert auditor.get("/api/v1/findings/?tenant=beta").json()["results"] != after["results"]


def test_findings_api_for_a_tenant_viewer_is_never_cached(small_world, personas):
    viewer = personas["viewer_alpha"]
    client = api_client(viewer)
    assert client.get("/api/v1/findings/").json()["count"] > 0
    Tenant.objects.get(slug="alpha").viewers.remove(viewer)
    assert client.get("/api/v1/findings/").json()["count"] == 0
