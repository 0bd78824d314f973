"""The tenants page (/tenants/): search, trust-class filter, server-side sort, scoped by role
(issue 19 item 7). Its query count is pinned in tests/test_query_counts.py."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.utils import timezone

from inventory.models import Cluster
from posture.models import Finding, PostureRun, TenantScore
from tenants.models import Tenant, TenantNamespace, TrustClass
from tenants.services import unclassified_namespaces_set, unclassified_tenant_ensure

pytestmark = pytest.mark.django_db


@pytest.fixture
def tenants(personas):
    """Three tenants: risk 10 / 300 / 50, open findings 1 / 1 / 3."""
    internal = TrustClass.objects.get(slug="internal")
    external = TrustClass.objects.get(slug="external")
    run = PostureRun.objects.create()
    cluster = Cluster.objects.create(name="lab")
    now = timezone.now()
    rows = {}
    for slug, name, trust_class, risk, score, findings in (
        ("ada", "Ada Labs", internal, 10.0, 99.6, 1),
        ("bolt", "Bolt Cloud", external, 300.0, 88.7, 1),
        ("cyan", "Cyan Research", internal, 50.0, 98.0, 3),
    ):
        tenant = Tenant.objects.create(slug=slug, name=name, trust_class=trust_class)
        TenantScore.objects.create(
            run=run, tenant=tenant, computed_at=now, risk=risk, score=score, grade="C"
        )
        for i in range(findings):
            finding = Finding.objects.create(
                check_id="POD-001",
                severity="high",
                cluster=cluster,
                subject_kind="Pod",
                subject_namespace=slug,
                subject_name=f"p{i}",
                fingerprint=f"{slug}-{i}",
                title="t",
                first_seen=now,
                last_seen=now,
            )
            finding.tenants.add(tenant)
        rows[slug] = tenant
    TenantNamespace.objects.create(tenant=rows["cyan"], name="genomics-batch")
    rows["ada"].viewers.add(personas["viewer_alpha"])
    return rows


def listed(user, query: str = "") -> list[str]:
    client = Client()
    client.force_login(user)
    response = client.get(f"/tenants/{query}")
    assert response.status_code == 200
    table = response.content.decode().split('id="tenants"')
    if len(table) == 1:
        return []
    return re.findall(r'href="/tenants/([a-z0-9-]+)/"', table[1].split("</table>")[0])


def test_sorted_by_risk_by_default_then_score_findings_and_name(tenants, personas):
    lead = personas["security_lead"]
    assert listed(lead) == ["bolt", "cyan", "ada"]
    assert listed(lead, "?sort=score") == ["bolt", "cyan", "ada"]  # lowest score first
    assert listed(lead, "?sort=findings") == ["cyan", "bolt", "ada"]
    assert listed(lead, "?sort=name") == ["ada", "bolt", "cyan"]
    assert listed(lead, "?sort=nonsense") == ["bolt", "cyan", "ada"]  # falls back to risk


def test_scores_shown_alike_are_sorted_by_risk_not_by_name(tenants, personas):
    """Scores are shown rounded (0.1 past ~11,500 points): two tenants of one shown score are
    told apart by their risk points, the most exposed first, never by their names."""
    run = PostureRun.objects.create()
    now = timezone.now()
    for slug, risk in (("ada", 17984.0), ("cyan", 26457.0)):
        TenantScore.objects.create(
            run=run, tenant=tenants[slug], computed_at=now, risk=risk, score=0.1, grade="F"
        )
    lead = personas["security_lead"]
    assert listed(lead, "?sort=score") == ["cyan", "ada", "bolt"]
    assert listed(lead) == ["cyan", "ada", "bolt"]


def test_search_by_name_slug_or_namespace_and_filter_by_class(tenants, personas):
    lead = personas["auditor"]
    assert listed(lead, "?q=cloud") == ["bolt"]
    assert listed(lead, "?q=genomics") == ["cyan"]  # a namespace the tenant owns
    assert listed(lead, "?class=internal") == ["cyan", "ada"]
    assert listed(lead, "?class=internal&q=ada") == ["ada"]


def test_search_matches_the_namespaces_of_the_unclassified_row(tenants, personas):
    """The unclassified row lists the namespaces nobody claims (as of the last score): the
    search "name, slug or namespace" finds it by one of them, as it finds a tenant's."""
    system = unclassified_tenant_ensure()
    unclassified_namespaces_set(["calico-system", "gpu-burn"])
    TenantScore.objects.create(  # a row only while it has something judged
        run=PostureRun.objects.get(),
        tenant=system,
        computed_at=timezone.now(),
        risk=20.0,
        score=99.0,
        grade="C",
    )
    lead = personas["security_lead"]
    assert listed(lead, "?q=calico") == ["unclassified"]
    assert listed(lead, "?q=GPU-BURN") == ["unclassified"]
    assert listed(lead, "?q=genomics") == ["cyan"]  # not every row: only where it is listed
    # Never by the JSON the names are stored in.
    assert listed(lead, "?q=%22%2C%20%22") == listed(lead, "?q=%5B") == []


def test_search_does_not_multiply_the_counts(tenants, personas):
    TenantNamespace.objects.create(tenant=tenants["cyan"], name="genomics-train")
    client = Client()
    client.force_login(personas["security_lead"])
    html = client.get("/tenants/?q=genomics").content.decode()
    assert "3 high" in html and "6 high" not in html


def test_a_tenant_viewer_sees_only_their_tenants(tenants, personas):
    assert listed(personas["viewer_alpha"]) == ["ada"]
    assert listed(personas["viewer_alpha"], "?q=bolt") == []
    assert listed(personas["viewer_beta"]) == []
    assert listed(personas["procurement"]) == []


def test_the_tenants_page_is_in_the_menu(tenants, personas):
    client = Client()
    client.force_login(personas["platform_engineer"])
    assert 'href="/tenants/"' in client.get("/home/").content.decode()
