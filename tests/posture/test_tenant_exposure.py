"""Each tenant a finding affects is weighed by what the cause spans of its own (DESIGN §6),
not by the finding's whole exposure: a ClusterRoleBinding giving one tenant's group
cluster-admin reaches 6 namespaces, one of hr's and five of search's, so hr's risk counts
exposure 1 and search's 5 (rtholdout k34: every victim counted 7, and a CPU-only tenant with
one namespace took most of its risk from it). The score, its contributions, the finding's
`risk` in the API and the actions' risk removed all read the same per-tenant exposure."""

from __future__ import annotations

from dataclasses import replace

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

import posture.rules  # noqa: F401  (registers the checks)
from inventory.models import Cluster
from inventory.sources.normalise import normalise
from posture.action_store import actions_refresh
from posture.models import ActionTenant, Finding, FindingTenant, PostureRun
from posture.rules.registry import merge_drafts, run_checks
from posture.rules.subjects import node_draft
from posture.scoring import finding_risk
from posture.services import findings_refresh, scores_compute
from tenants.models import Tenant, TrustClass
from tests.conftest import api_client
from tests.posture.builders import gpu_node, inputs, trust_class
from tests.posture.test_rules_cross_tenant import BASE, binding, cluster_role, namespace

SEARCH_NAMESPACES = tuple(f"search-{i}" for i in range(5))
RESEARCH = ("research", ("research",), ("group:research-leads",))
HR = ("hr", ("hr",), ())
SEARCH = ("search", SEARCH_NAMESPACES, ())
ADMIN = cluster_role("cluster-admin", [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}])


def cluster_admin_binding():
    """The K8S-008 draft of `research-leads-cluster-admin`: research's group holds
    cluster-admin, so it writes in hr's one namespace and in search's five."""
    from posture.inputs import PostureInputs, TenantInfo

    tenants = tuple(
        TenantInfo(slug, slug.title(), trust_class("internal"), spaces, principals)
        for slug, spaces, principals in (RESEARCH, HR, SEARCH)
    )
    objects = [
        *BASE,
        ADMIN,
        *(namespace(ns) for _, spaces, _ in (RESEARCH, HR, SEARCH) for ns in spaces),
        binding("research-leads-cluster-admin", "cluster-admin", "Group:research-leads"),
    ]
    (draft,) = run_checks(PostureInputs("lab", normalise(objects), tenants), only=["K8S-008"])
    return draft


def test_each_victim_of_a_binding_gets_the_count_of_its_own_namespaces():
    draft = cluster_admin_binding()
    assert draft.tenants == ("hr", "research", "search")
    assert draft.exposure == 6  # the finding spans every namespace it reaches
    # The victims their own; the grantee, whose principals write in all six, the whole.
    assert draft.tenant_exposures == {"hr": 1, "search": 5}


@pytest.fixture
def world(personas):
    internal = TrustClass.objects.get(slug="internal")
    for slug in ("research", "hr", "search"):
        Tenant.objects.create(slug=slug, name=slug.title(), trust_class=internal)
    Tenant.objects.get(slug="hr").viewers.add(personas["viewer_alpha"])
    return Cluster.objects.create(name="lab"), internal.risk_weight


def scored() -> dict[str, object]:
    run = PostureRun.objects.create()
    return {s.tenant.slug: s for s in scores_compute(run=run, now=timezone.now())}


def test_the_victims_risk_follows_their_own_exposure(world):
    cluster, weight = world
    findings_refresh(cluster=cluster, drafts=[cluster_admin_binding()], now=timezone.now())
    own = dict(FindingTenant.objects.values_list("tenant__slug", "exposure"))
    assert own == {"hr": 1, "search": 5, "research": None}  # null: the finding's 6
    scores = scored()
    (hr,) = scores["hr"].contributions
    (search,) = scores["search"].contributions
    (research,) = scores["research"].contributions
    assert (hr["exposure"], search["exposure"], research["exposure"]) == (1, 5, 6)
    assert hr["points"] == finding_risk(severity="high", exposure=1, class_weight=weight)
    assert search["points"] == finding_risk(severity="high", exposure=5, class_weight=weight)
    assert hr["points"] < search["points"] < research["points"]
    # The reason says the tenant's own figure, and hr's names no exposure at all.
    assert "exposure" not in hr["reason"] and "exposure 5 " in search["reason"]
    for score in scores.values():  # explainable: the contributions add up to the risk
        assert score.risk == pytest.approx(sum(c["points"] for c in score.contributions))


def test_an_actions_risk_removed_is_what_the_scores_lose(world):
    cluster, _ = world
    findings_refresh(cluster=cluster, drafts=[cluster_admin_binding()], now=timezone.now())
    before = {slug: s.risk for slug, s in scored().items()}
    actions_refresh(now=timezone.now())
    removed = dict(ActionTenant.objects.values_list("tenant__slug", "risk"))
    Finding.objects.update(status="accepted")  # closed (its risk accepted): counts 0
    after = {slug: s.risk for slug, s in scored().items()}
    lost = {slug: round(before[slug] - after[slug], 2) for slug in before}
    assert removed == lost
    assert removed["hr"] < removed["search"]


def test_the_api_risk_of_the_finding_is_the_sum_of_its_contributions(world, personas):
    cluster, weight = world
    findings_refresh(cluster=cluster, drafts=[cluster_admin_binding()], now=timezone.now())
    points = {slug: s.contributions[0]["points"] for slug, s in scored().items()}
    lead = api_client(personas["security_lead"])
    (row,) = lead.get("/api/v1/findings/").json()["results"]
    assert row["risk"] == round(sum(points.values()), 2)
    assert lead.get(f"/api/v1/findings/{row['id']}/").json()["risk"] == row["risk"]
    hr = Tenant.objects.get(slug="hr").pk
    posture = lead.get(f"/api/v1/tenants/{hr}/posture/").json()
    assert posture["findings"][0]["risk"] == row["risk"]
    # hr's viewer: what the finding adds to hr's own score, its exposure 1.
    (mine,) = api_client(personas["viewer_alpha"]).get("/api/v1/findings/").json()["results"]
    assert mine["risk"] == points["hr"]
    assert mine["risk"] == finding_risk(severity="high", exposure=1, class_weight=weight)


def node(tenants: dict[str, int]):
    """A STACK-004 draft on a 4-GPU node for tenants a and b, with their own exposures."""
    draft = node_draft(
        "STACK-004", gpu_node("n1"), inputs=inputs(), tenants=("a", "b"), evidence={"node": "n1"}
    )
    return replace(draft, tenant_exposures=tenants)


@pytest.fixture
def pair(personas):
    """Tenants a and b (internal), and the cluster lab."""
    internal = TrustClass.objects.get(slug="internal")
    for slug in "ab":
        Tenant.objects.create(slug=slug, name=slug, trust_class=internal)
    return Cluster.objects.create(name="lab")


def test_an_exposure_change_alone_updates_the_link_and_rewrites_no_finding(pair):
    cluster = pair
    findings_refresh(cluster=cluster, drafts=[node({"a": 1})], now=timezone.now())
    (finding,) = Finding.objects.values_list("pk", "evidence_digest", "exposure")
    assert finding[2] == 4

    def links() -> dict[str, int | None]:
        return dict(FindingTenant.objects.values_list("tenant__slug", "exposure"))

    assert links() == {"a": 1, "b": None}
    risk = scored()["a"].risk
    with CaptureQueriesContext(connection) as queries:
        findings_refresh(cluster=cluster, drafts=[node({"a": 2})], now=timezone.now())
    assert links() == {"a": 2, "b": None}
    writes = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("UPDATE")]
    assert not any('"evidence"' in sql for sql in writes), writes  # the finding is not churned
    assert Finding.objects.values_list("pk", "evidence_digest", "exposure").get() == finding
    assert scored()["a"].risk > risk
    # Back to the finding's own: the link says null again, as every other link.
    findings_refresh(cluster=cluster, drafts=[node({"a": 4})], now=timezone.now())
    assert links() == {"a": None, "b": None}
    findings_refresh(cluster=cluster, drafts=[node({"b": 3})], now=timezone.now())
    assert links() == {"a": None, "b": 3}


def test_replicas_merged_add_each_tenants_own_exposure():
    first = replace(node({"a": 1}), exposure=4)
    second = replace(node({}), tenants=("a",), exposure=2)
    (merged,) = merge_drafts([first, second])
    assert merged.exposure == 6
    assert merged.tenant_exposures == {"a": 3, "b": 4}


def test_an_exposure_change_alone_regroups_the_actions(pair):
    cluster = pair
    findings_refresh(cluster=cluster, drafts=[node({"a": 1})], now=timezone.now())
    first = actions_refresh(now=timezone.now())
    kept = actions_refresh(now=timezone.now(), previous=first.digest, previous_count=first.count)
    assert not kept.rebuilt
    findings_refresh(cluster=cluster, drafts=[node({"a": 2})], now=timezone.now())
    moved = actions_refresh(now=timezone.now(), previous=first.digest, previous_count=first.count)
    assert moved.rebuilt
    weight = TrustClass.objects.get(slug="internal").risk_weight
    risk = ActionTenant.objects.get(tenant__slug="a").risk
    assert risk == finding_risk(severity="medium", exposure=2, class_weight=weight)
