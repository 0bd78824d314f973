"""The tenant page at any size (issue 18): findings grouped by check (the explanation and fix
once, the subjects as a table), collapsed below the top risks, filtered, paginated, never more
than a bounded number of rows and the same number of queries however many findings there are."""

from __future__ import annotations

import copy
import json
import re

import pytest
from django.core.cache import cache
from django.db import connection
from django.db.models import Count
from django.test import Client
from django.test.utils import CaptureQueriesContext

from inventory.services import cluster_sync_from_snapshot
from inventory.sync import cluster_get_or_create
from posture import tenant_findings
from posture.models import Finding
from posture.rules import CHECKS
from posture.services import posture_evaluate
from tenants.models import Tenant
from tests.conftest import world_snapshot_path

pytestmark = pytest.mark.django_db

# The page's queries: session, user, roles, tenant, latest score, trend, approvals, the
# clusters' currency (stale or re-scoring banners), the subjects of the top risks, the groups (by
# check and cluster, which names the clusters for the filter; those are a query of their own when
# filtered), the rows (one window query; one check's view: count + page), their tenants, and for a
# tenant viewer the names they may not see (2: tenants, cluster objects) and, for the cluster
# holding namespaces no tenant claims, its platform namespaces (2: the unclassified party's names
# are hidden, the platform's are not: inventory.presenter); where no worker runs (Celery eager,
# as here), first the sweep for what expired since the last score (5: posture.rescore).
PINNED_TENANT_PAGE = 23


def grown_snapshot(tmp_path, nodes: int):
    """tests/data/small-cluster.json with its time-sliced GPU node repeated `nodes` times, each
    copy running the operator's pods and alpha's and beta's pods: every node shared, so every
    per-node check fires once per node (written as `kubectl get -o json` prints them)."""
    document = json.loads(world_snapshot_path().read_text())

    def on_gpu_node(item: dict) -> bool:
        return item["kind"] == "Pod" and item["spec"].get("nodeName") == "gpu-ts-1"

    node = next(i for i in document["items"] if i["metadata"]["name"] == "gpu-ts-1")
    pods = [i for i in document["items"] if on_gpu_node(i)]
    items = [i for i in document["items"] if i is not node and not on_gpu_node(i)]
    for n in range(nodes):
        name = f"gpu-ts-{n}"
        copied = copy.deepcopy(node)
        copied["metadata"].update(name=name, uid=f"uid-node-{n}")
        copied["metadata"].setdefault("labels", {})["kubernetes.io/hostname"] = name
        items.append(copied)
        for pod in pods:
            p = copy.deepcopy(pod)
            meta = pod["metadata"]
            p["metadata"].update(name=f"{meta['name']}-{n}", uid=f"{meta['uid']}-{n}")
            p["spec"]["nodeName"] = name
            items.append(p)
    path = tmp_path / f"grown-{nodes}.json"
    path.write_text(json.dumps({**document, "items": items}))
    return path


def grow(tmp_path, nodes: int) -> None:
    cluster = cluster_get_or_create(name="lab")
    cluster_sync_from_snapshot(cluster=cluster, paths=[grown_snapshot(tmp_path, nodes)])
    posture_evaluate()


def page(user, query: str = "") -> tuple[str, int]:
    client = Client()
    client.force_login(user)
    cache.clear()
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(f"/tenants/alpha/{query}")
    assert response.status_code == 200
    return response.content.decode(), len(ctx)


def finding_rows(html: str) -> list[str]:
    return re.findall(r'<tr id="finding-(\d+)"', html)


def test_each_check_is_explained_once_and_its_subjects_are_a_bounded_table(
    small_world, personas, tmp_path
):
    grow(tmp_path, 30)
    alpha_findings = Finding.objects.affecting(tenant__slug="alpha").filter(status="open")
    per_check = {}
    for check_id in alpha_findings.values_list("check_id", flat=True):
        per_check[check_id] = per_check.get(check_id, 0) + 1
    big = max(per_check, key=per_check.get)
    assert per_check[big] > tenant_findings.ROWS_PER_GROUP  # one cause per node: 30 of them

    html, _ = page(personas["security_lead"])
    pages = [html]
    if len(per_check) > tenant_findings.GROUPS_PER_PAGE:  # the other groups on the next page
        pages.append(page(personas["security_lead"], "?page=2")[0])

    for check_id in per_check:  # one group per check, collapsed (no "open" attribute)
        group = f'<details class="check-group" id="check-{check_id}">'
        assert sum(p.count(group) for p in pages) == 1
    remediation = str(CHECKS[big].remediation).split("`")[0][:40]
    # The page its group is on (a low-severity group may be on the next).
    (shown,) = [p for p in pages if f'id="check-{big}"' in p]
    assert shown.count(remediation) == 1  # the fix once, not once per node
    assert len(finding_rows(html)) <= tenant_findings.ROWS_PER_GROUP * len(per_check)
    assert f"All {per_check[big]} {big} findings" in shown
    # The top risks come before the groups and link to their check's group.
    assert html.index('id="why-h"') < html.index('class="check-group"')
    why = html[html.index('id="why-h"') : html.index('id="findings-h"')]
    linked = re.findall(r'href="\?check=([A-Z0-9-]+)#check-\1"', why)
    assert linked and set(linked) <= set(per_check)


def test_one_checks_view_pages_through_all_its_subjects(
    small_world, personas, tmp_path, monkeypatch
):
    grow(tmp_path, 30)
    big = (
        Finding.objects.affecting(tenant__slug="alpha")
        .filter(status="open")
        .values_list("check_id", flat=True)
        .order_by("check_id")
        .first()
    )
    alpha = Finding.objects.affecting(tenant__slug="alpha")
    total = alpha.filter(check_id=big, status="open").count()
    monkeypatch.setattr(tenant_findings, "ROWS_PER_PAGE", 12)

    seen: list[str] = []
    for number in range(1, 10):
        html, _ = page(personas["security_lead"], f"?check={big}&page={number}")
        rows = finding_rows(html)
        assert len(rows) <= 12
        assert f'<details class="check-group" id="check-{big}" open>' in html
        seen += rows
        if f"check={big}&amp;page={number + 1}" not in html:
            break
    assert len(seen) == len(set(seen)) == total  # every subject once, across the pages


def test_filters_narrow_the_groups(small_world, personas, tmp_path):
    grow(tmp_path, 3)
    lead = personas["security_lead"]
    severities = set(
        Finding.objects.affecting(tenant__slug="alpha")
        .filter(status="open")
        .values_list("severity", flat=True)
    )
    severity = sorted(severities)[0]
    html, _ = page(lead, f"?severity={severity}")
    shown = set(re.findall(r'<details class="check-group" id="check-([A-Z0-9-]+)"', html))
    expected = set(
        Finding.objects.affecting(tenant__slug="alpha")
        .filter(status="open", severity=severity)
        .values_list("check_id", flat=True)
    )
    assert shown == expected and shown
    html, _ = page(lead, "?cluster=no-such-cluster")
    assert "matching these filters" in html and 'class="check-group"' not in html
    # An unknown check filters nothing rather than failing.
    assert finding_rows(page(lead, "?check=NOPE-1")[0]) == finding_rows(page(lead)[0])


def test_a_viewer_sees_the_grouped_page_without_the_other_tenants_names(
    small_world, personas, tmp_path
):
    grow(tmp_path, 3)
    html, _ = page(personas["viewer_alpha"])
    assert 'class="check-group"' in html
    for name in ("beta-prod", "Beta Corp", "inference-0"):
        assert name not in html


@pytest.mark.parametrize("persona", ["security_lead", "viewer_alpha"])
def test_tenant_page_queries_do_not_grow_with_the_cluster(small_world, personas, tmp_path, persona):
    user = personas[persona]
    grow(tmp_path, 3)
    small = (page(user)[1], page(user, "?check=SHARE-001")[1])
    grow(tmp_path, 30)
    large = (page(user)[1], page(user, "?check=SHARE-001")[1])
    assert small == large
    assert max(large) <= PINNED_TENANT_PAGE


def test_why_this_score_names_the_subject_of_each_contribution(small_world, personas, tmp_path):
    # Two STACK-001 rows on two nodes read alike without the node: each row links its finding.
    grow(tmp_path, 3)
    html, _ = page(personas["security_lead"])
    why = html[html.index('id="why-h"') : html.index('id="findings-h"')]
    linked = [int(i) for i in re.findall(r'href="/findings/(\d+)/"', why)]
    assert linked and len(linked) == len(set(linked))
    for finding in Finding.objects.filter(id__in=linked):
        assert f"{finding.subject_kind} " in why and finding.subject_name in why
        assert finding.tenants.filter(slug="alpha").exists()


def test_a_check_on_two_clusters_is_one_group_and_the_cluster_filter_offers_both(
    small_world, personas, tmp_path
):
    # The groups are counted per check and cluster in one query and merged: a check on two
    # clusters is one group counting both clusters' subjects, and the cluster filter lists
    # every cluster of the tenant's findings, filtered on one of them or not.
    grow(tmp_path, 3)
    other = cluster_get_or_create(name="lab-2")
    cluster_sync_from_snapshot(cluster=other, paths=[world_snapshot_path()])
    posture_evaluate()
    alpha = Tenant.objects.get(slug="alpha")
    live = tenant_findings.live_findings(alpha)
    per_check = live.values("check_id").annotate(n=Count("cluster", distinct=True))
    on_both = {row["check_id"] for row in per_check if row["n"] == 2}

    listing = tenant_findings.tenant_findings_page(alpha, {})
    assert listing.clusters == ["lab", "lab-2"]
    check = next(g.check_id for g in listing.groups if g.check_id in on_both)
    (group,) = [g for g in listing.groups if g.check_id == check]
    assert group.total == live.filter(check_id=check).count()
    assert group.open == live.filter(check_id=check, status="open").count()

    listing = tenant_findings.tenant_findings_page(alpha, {"cluster": "lab"})
    assert listing.clusters == ["lab", "lab-2"]
    (group,) = [g for g in listing.groups if g.check_id == check]
    assert group.total == live.filter(check_id=check, cluster__name="lab").count()
    html, _ = page(personas["security_lead"], "?cluster=lab")
    assert "<option selected>lab</option>" in html and "<option>lab-2</option>" in html
