"""A tenant nothing was read about has no score (risk, score and grade null, with why), never
0 / 100 / A: the API, the overview, the tenants page and the tenant's page; a tenant whose
cluster was read and holds nothing of theirs is scored (0 / 100 / A is then true)."""

from __future__ import annotations

import importlib
import re
from io import StringIO
from pathlib import Path

import pytest
from django.apps import apps
from django.core.management import CommandError, call_command
from django.test import Client

from posture.models import PostureRun, TenantScore
from tests.conftest import api_client

TENANTS = """
tenants:
  - slug: alpha
    name: Team Alpha
    trust_class: internal
    namespaces: [team-alpha]
  - slug: gamma
    name: Customer Gamma
    trust_class: external
    namespaces: []
"""
BROKEN = '{"apiVersion": "v1", "kind": "List", "items": ['
# A cluster read that runs nothing (an empty List is no cluster: that sync fails).
IDLE = (
    '{"apiVersion": "v1", "kind": "List", "items": '
    '[{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}]}'
)


def _declare(tmp_path: Path, text: str = TENANTS) -> None:
    (tmp_path / "tenants.yaml").write_text(text)
    call_command("apply_tenants", str(tmp_path / "tenants.yaml"), stdout=StringIO())


def _sync(tmp_path: Path, content: str) -> None:
    (tmp_path / "c1.json").write_text(content)
    args = ("sync_cluster", "--cluster", "c1", "--snapshot", str(tmp_path / "c1.json"))
    try:
        call_command(*args, stdout=StringIO(), stderr=StringIO())
    except CommandError:
        assert content == BROKEN  # only the broken file fails


def _score() -> None:
    call_command("score", stdout=StringIO(), stderr=StringIO())


def _text(client: Client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.content.decode()))


def _scores(lead) -> list[tuple]:
    rows = api_client(lead).get("/api/v1/tenants/").json()["results"]
    keys = ("slug", "risk", "score", "grade", "scored", "not_scored_reason")
    return [tuple(r.get(k) for k in keys) for r in rows if r["slug"] != "unclassified"]


@pytest.mark.django_db
def test_tenants_of_a_cluster_whose_only_sync_failed_are_not_scored(tmp_path, personas):
    lead = personas["security_lead"]
    _declare(tmp_path)
    _sync(tmp_path, BROKEN)
    _score()

    reason = "no_successful_sync"
    assert _scores(lead) == [
        ("alpha", None, None, None, False, reason),
        ("gamma", None, None, None, False, reason),
    ]
    alpha = api_client(lead).get("/api/v1/tenants/").json()["results"][0]
    posture = api_client(lead).get(f"/api/v1/tenants/{alpha['id']}/posture/").json()
    assert (posture["risk"], posture["score"], posture["grade"]) == (None, None, None)
    assert (posture["scored"], posture["not_scored_reason"]) == (False, reason)
    assert not TenantScore.objects.exists()  # no fake 100 for the trend either

    client = Client()
    client.force_login(lead)
    why = "no cluster has been synced successfully yet, so nothing was read to score"
    overview = _text(client, "/")
    assert "Team Alpha alpha internal not scored —" in overview
    assert f"Not scored: {why}." in overview
    assert "grade-A" not in client.get("/").content.decode()
    assert "findings-chart" not in overview  # no bars of zero for tenants nobody judged
    listing = _text(client, "/tenants/")
    assert "not scored" in listing and f"Not scored: {why}." in listing
    page = client.get("/tenants/alpha/").content.decode()
    assert "/100" not in page and "grade-A" not in page and "trend-chart" not in page
    assert f"Not scored: {why}." in _text(client, "/tenants/alpha/")


@pytest.mark.django_db
def test_a_read_cluster_holding_nothing_of_a_tenant_scores_it_and_latecomers_wait(
    tmp_path, personas
):
    lead = personas["security_lead"]
    _declare(tmp_path)
    _sync(tmp_path, IDLE)  # read, and nothing runs anywhere: no risk is the truth
    _score()
    later = TENANTS + "  - slug: beta\n    name: Team Beta\n    trust_class: internal\n"
    _declare(tmp_path, later)  # declared after the last score run (the re-score not yet run)
    TenantScore.objects.filter(tenant__slug="beta").delete()

    assert _scores(lead) == [  # the scored ones first, by risk then slug; the unscored after
        ("alpha", 0.0, 100, "A", True, None),
        ("gamma", 0.0, 100, "A", True, None),
        ("beta", None, None, None, False, "not_scored_yet"),
    ]
    client = Client()
    client.force_login(lead)
    overview = _text(client, "/")
    assert overview.index("Team Alpha") < overview.index("Customer Gamma")
    assert overview.index("Customer Gamma") < overview.index("Team Beta")
    assert "Not scored: no score run has scored this tenant yet." in overview
    listing = _text(client, "/tenants/")
    assert listing.index("Customer Gamma") < listing.index("Team Beta")


@pytest.mark.django_db
def test_the_migration_drops_the_scores_of_runs_before_any_cluster_was_read(personas):
    from tenants.models import Tenant, TrustClass

    tenant = Tenant.objects.create(
        slug="alpha", name="Alpha", trust_class=TrustClass.objects.get(slug="internal")
    )

    def scored(clusters: list[str]) -> TenantScore:
        run = PostureRun.objects.create(clusters=clusters)
        return TenantScore.objects.create(
            run=run, tenant=tenant, computed_at=run.started_at, risk=0, score=100, grade="A"
        )

    scored([])  # the only sync failed: nothing read
    kept = [scored(["c1"]).pk, scored([]).pk]  # read; then a re-score of another cluster
    migration = importlib.import_module("posture.migrations.0016_drop_scores_before_any_read")
    migration.drop_scores_before_any_read(apps, None)
    assert list(TenantScore.objects.order_by("id").values_list("pk", flat=True)) == kept
