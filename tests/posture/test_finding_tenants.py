"""A finding carries the tenants it affects (FindingTenant): written in bulk by
findings_refresh, read by the scores, the tenant viewer's scope and the `tenant` filter."""

from __future__ import annotations

from dataclasses import replace

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from inventory.models import Cluster
from posture.models import Finding, FindingTenant, PostureRun
from posture.rules.subjects import node_draft
from posture.services import findings_refresh, scores_compute
from tenants.models import Tenant, TrustClass
from tests.conftest import api_client
from tests.posture.builders import gpu_node, inputs

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(personas):
    internal = TrustClass.objects.get(slug="internal")
    tenants = {s: Tenant.objects.create(slug=s, name=s, trust_class=internal) for s in "abc"}
    tenants["a"].viewers.add(personas["viewer_alpha"])
    return Cluster.objects.create(name="lab"), tenants


def draft(node: str, *tenants: str, check: str = "STACK-004"):
    return node_draft(
        check, gpu_node(node), inputs=inputs(), tenants=tenants, evidence={"node": node}
    )


def links() -> set[tuple[str, str]]:
    rows = FindingTenant.objects.values_list("finding__subject_name", "tenant__slug")
    return set(rows)


def test_one_finding_per_cause_with_its_tenants_kept_in_step(world):
    cluster, _ = world
    findings_refresh(cluster=cluster, drafts=[draft("n1", "a", "b")], now=timezone.now())
    (finding,) = Finding.objects.all()
    assert links() == {("n1", "a"), ("n1", "b")} and finding.exposure == 4
    # b left the node, c arrived: the same finding, its tenants follow.
    findings_refresh(cluster=cluster, drafts=[draft("n1", "a", "c")], now=timezone.now())
    assert Finding.objects.get().pk == finding.pk
    assert links() == {("n1", "a"), ("n1", "c")}
    # Resolved: it keeps whom it affected, and stays on their history.
    findings_refresh(cluster=cluster, drafts=[], now=timezone.now())
    assert Finding.objects.get().status == "resolved"
    assert links() == {("n1", "a"), ("n1", "c")}


def test_an_unknown_slug_and_no_tenant_make_no_links(world):
    cluster, _ = world
    findings_refresh(
        cluster=cluster, drafts=[draft("n1"), draft("n2", "ghost", "a")], now=timezone.now()
    )
    assert links() == {("n2", "a")}
    assert Finding.objects.count() == 2


def _refresh_queries(cluster: Cluster, nodes: int) -> int:
    drafts = [draft(f"n{i}", "a", "b", "c"[: i % 2]) for i in range(nodes)]
    findings_refresh(cluster=cluster, drafts=drafts, now=timezone.now())  # create
    moved = [draft(f"n{i}", "a", "c") for i in range(nodes)]  # every finding's tenants change
    with CaptureQueriesContext(connection) as first:
        findings_refresh(cluster=cluster, drafts=moved, now=timezone.now())
    return len(first)


def test_refresh_writes_the_relation_in_bulk_not_per_finding(world):
    cluster, _ = world
    small = _refresh_queries(cluster, 5)
    other = Cluster.objects.create(name="big")
    assert _refresh_queries(other, 60) == small


def test_each_tenant_is_scored_on_every_finding_that_affects_it(world):
    cluster, tenants = world
    findings_refresh(
        cluster=cluster,
        drafts=[draft("n1", "a", "b"), draft("n2", "b")],
        now=timezone.now(),
    )
    scores = {
        s.tenant.slug: s
        for s in scores_compute(run=PostureRun.objects.create(), now=timezone.now())
    }
    assert len(scores["a"].contributions) == 1
    assert len(scores["b"].contributions) == 2
    assert scores["c"].contributions == []


def test_a_viewer_sees_a_shared_finding_once_with_only_their_slug(world, personas):
    cluster, _ = world
    findings_refresh(
        cluster=cluster,
        drafts=[draft("n1", "a", "b"), draft("n2", "b"), draft("n3", "a", "b", "c")],
        now=timezone.now(),
    )
    viewer = personas["viewer_alpha"]
    assert Finding.objects.visible_to(viewer).count() == 2  # an EXISTS: no duplicate rows
    rows = api_client(viewer).get("/api/v1/findings/").json()["results"]
    assert sorted((r["subject_name"], tuple(r["tenants"])) for r in rows) == [
        ("n1", ("a",)),
        ("n3", ("a",)),
    ]
    lead = api_client(personas["security_lead"])
    everything = lead.get("/api/v1/findings/?tenant=b").json()["results"]
    assert sorted((r["subject_name"], tuple(r["tenants"])) for r in everything) == [
        ("n1", ("a", "b")),
        ("n2", ("b",)),
        ("n3", ("a", "b", "c")),
    ]
    detail = lead.get(f"/api/v1/findings/{everything[0]['id']}/").json()
    assert detail["tenants"] == everything[0]["tenants"]


def test_a_title_longer_than_the_column_is_stored_cut_with_a_mark(world):
    # Checks keep their titles within TITLE_MAX; one that does not is cut visibly, not silently.
    cluster, _ = world
    long = replace(draft("n1", "a"), title="t" * 400)
    fits = replace(draft("n2", "a"), title="f" * 300)
    findings_refresh(cluster=cluster, drafts=[long, fits], now=timezone.now())
    titles = dict(Finding.objects.values_list("subject_name", "title"))
    assert titles["n1"] == "t" * 299 + "…"
    assert titles["n2"] == "f" * 300
