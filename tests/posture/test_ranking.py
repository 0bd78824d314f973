"""Tenants ranked by risk points (issue 18): the order, the trend arrow, and class weights
edited in the admin moving the ranking."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from audit.models import AuditEvent
from posture.overview import overview_rows
from posture.ranking import RankedRow, ranked, trend_of
from posture.services import posture_evaluate
from tenants.models import Tenant, TrustClass


def row(key: str, risk: float | None, previous: float | None = None) -> RankedRow:
    return RankedRow(key=key, label=key, trust_class="internal", risk=risk, previous_risk=previous)


def test_most_risk_first_unscored_after_and_only_equal_risk_falls_back_to_the_key():
    rows = [row("b", 10.5), row("a", 10.5), row("z", 900.25), row("new", None), row("c", 10.49)]
    assert [r.key for r in ranked(rows)] == ["z", "a", "b", "c", "new"]


@pytest.mark.parametrize(
    ("risk", "previous", "trend"),
    [
        (120.0, 100.0, "up"),
        (80.0, 100.0, "down"),
        (100.0, 100.0, "same"),
        (5.0, None, "new"),
        (None, 5.0, "new"),
        (100.004, 100.0, "same"),
    ],
)
def test_trend_against_the_run_before(risk, previous, trend):
    assert trend_of(risk, previous) == trend
    if trend in ("up", "down"):
        assert row("t", risk, previous).change == round(risk - previous, 2)


def _admin() -> Client:
    admin = User.objects.create_superuser("root", password="not-used-in-tests-1")
    client = Client()
    client.force_login(admin)
    return client


def _set_weight_in_admin(client: Client, trust_class: TrustClass, weight: float) -> None:
    """Post the admin's change form as a person would: every field as shown, one changed."""
    fields = ("slug", "name", "description", "approval_expiry_days", "rank")
    data = {f: getattr(trust_class, f) or "" for f in fields}
    data |= {
        f: json.dumps(getattr(trust_class, f))
        for f in ("allowed_modes", "same_class_only_modes", "approved_registries")
    }
    for flag in ("requires_dedicated_pool", "requires_reset_attestation", "require_image_digest"):
        if getattr(trust_class, flag):
            data[flag] = "on"
    data["risk_weight"] = weight
    url = f"/admin/tenants/trustclass/{trust_class.pk}/change/"
    response = client.post(url, data)
    assert response.status_code == 302, response.content.decode()[:2000]


@pytest.mark.django_db
def test_a_class_weight_edited_in_the_admin_changes_the_ranking(small_world, personas):
    lead = personas["security_lead"]
    before = [r for r in overview_rows(lead) if r.risk]
    assert len(before) >= 2
    first, second = before[0], before[1]
    assert first.risk > second.risk  # different findings never tie
    lower = TrustClass.objects.get(slug=second.trust_class)
    assert lower.slug != first.trust_class
    _set_weight_in_admin(_admin(), lower, 100)
    assert TrustClass.objects.get(pk=lower.pk).risk_weight == 100
    event = AuditEvent.objects.filter(object_type="tenants.trustclass").latest("time")
    assert (event.before["risk_weight"], event.after["risk_weight"]) == (lower.risk_weight, 100)
    posture_evaluate()
    after = [r for r in overview_rows(lead) if r.risk]
    assert after[0].tenant_slug == second.tenant_slug
    assert after[0].risk == pytest.approx(second.risk * 100 / lower.risk_weight, rel=1e-3)
    assert after[0].trend == "up" and after[1].trend == "same"


@pytest.mark.django_db
def test_overview_and_tenant_page_queries_do_not_grow_with_runs_or_tenants(small_world, personas):
    client = Client()
    client.force_login(personas["security_lead"])

    def queries(url: str) -> int:
        cache.clear()  # the overview body is cached per posture version: count it cold
        with CaptureQueriesContext(connection) as ctx:
            assert client.get(url).status_code == 200
        return len(ctx)

    before = (queries("/"), queries("/tenants/alpha/"))
    sensitive = TrustClass.objects.get(slug="sensitive")
    for n in range(3):
        Tenant.objects.create(slug=f"extra-{n}", name=f"Extra {n}", trust_class=sensitive)
    posture_evaluate()
    posture_evaluate()  # more runs: a longer history and a trend for every tenant
    assert (queries("/"), queries("/tenants/alpha/")) == before
