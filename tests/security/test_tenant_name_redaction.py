"""Another tenant's display name (several words: "Beta Corp") is hidden from a tenant viewer
in what people type (an acceptance reason) and in what the product writes, on the finding's
page and in the API, while the viewer's own tenant's name ("Team Alpha") stays readable."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from posture.models import Finding
from tenants.models import Tenant
from tenants.redaction import HIDDEN_TENANT
from tests.conftest import api_client
from tests.posture.test_acceptance_carry import earlier_acceptance

pytestmark = pytest.mark.django_db

REASON = "Beta Corp signed off; BETA  corp's lead too. Team Alpha moves next month."
# The other tenant's name in any case or spacing: what a reader must not find.
THEIRS = re.compile(r"beta\s+corp", re.IGNORECASE)


def accepted_shared_finding(cluster, lead) -> Finding:
    """SHARE-001 (alpha and beta time-slice one GPU), accepted with a reason naming beta by
    its display name, through the page as a security lead does."""
    finding = Finding.objects.get(cluster=cluster, check_id="SHARE-001")
    client = Client()
    client.force_login(lead)
    until = (timezone.now().date() + timedelta(days=20)).isoformat()
    response = client.post(f"/findings/{finding.pk}/accept/", {"reason": REASON, "until": until})
    assert response.status_code == 302
    return finding


def test_an_acceptance_reason_naming_the_other_tenant_by_name_hides_it_on_the_page(
    small_world, personas
):
    finding = accepted_shared_finding(small_world, personas["security_lead"])
    viewer = Client()
    viewer.force_login(personas["viewer_alpha"])
    html = viewer.get(f"/findings/{finding.pk}/").content.decode()
    assert f"{HIDDEN_TENANT} signed off" in html
    assert not THEIRS.search(html), "the other tenant's name is on the page"
    assert "Team Alpha moves next month" in html  # their own tenant's name is theirs to read
    # The lead reads what was typed.
    lead = Client()
    lead.force_login(personas["security_lead"])
    assert "Beta Corp signed off" in lead.get(f"/findings/{finding.pk}/").content.decode()


def test_the_api_hides_the_other_tenants_name_in_reasons_and_earlier_acceptances(
    small_world, personas
):
    finding = accepted_shared_finding(small_world, personas["security_lead"])
    earlier_acceptance(
        finding, personas["security_lead"], "Beta Corp agreed to share until the move"
    )
    body = api_client(personas["viewer_alpha"]).get(f"/api/v1/findings/{finding.pk}/").json()
    assert body["accepted_reason"] == (
        f"{HIDDEN_TENANT} signed off; {HIDDEN_TENANT}'s lead too. Team Alpha moves next month."
    )
    assert (
        body["earlier_acceptances"][0]["reason"]
        == f"{HIDDEN_TENANT} agreed to share until the move"
    )
    assert not THEIRS.search(str(body))
    listed = api_client(personas["viewer_alpha"]).get("/api/v1/findings/?check=SHARE-001").json()
    assert listed["count"] >= 1 and not THEIRS.search(str(listed))


def test_a_name_that_contains_the_viewers_own_is_not_half_hidden(small_world, personas):
    """The viewer's own tenant named "Beta Corp Labs" beside the other "Beta Corp": the longer
    name is read whole, the shorter one hidden."""
    Tenant.objects.filter(slug="alpha").update(name="Beta Corp Labs")
    finding = Finding.objects.get(cluster=small_world, check_id="SHARE-001")
    Finding.objects.filter(pk=finding.pk).update(
        accepted_reason="Beta Corp Labs and Beta Corp agreed"
    )
    body = api_client(personas["viewer_alpha"]).get(f"/api/v1/findings/{finding.pk}/").json()
    assert body["accepted_reason"] == f"Beta Corp Labs and {HIDDEN_TENANT} agreed"
