"""What a user sees of a namespace nobody claims (posture/claims.py): the "Claim namespace"
action in /api/v1/actions/ and on the overview, the claim said first on its findings (API,
export and finding page), and the unclassified tenant's namespaces (tenants API, overview,
tenants page, its own page), gone once the namespace is claimed."""

from __future__ import annotations

import copy
import json
import re

import pytest
from django.test import Client

from inventory.services import cluster_sync_from_snapshot
from posture.models import Action, Finding
from posture.rules import CHECKS
from posture.services import posture_evaluate
from tenants.models import Tenant
from tests.conftest import api_client, content, load_json
from tests.tenants.test_unclassified_tenant import SCRATCH


def _sync(cluster, tmp_path, *extra: dict) -> None:
    objects = copy.deepcopy(load_json("small-cluster.json")["items"]) + list(extra)
    path = tmp_path / "world.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    cluster_sync_from_snapshot(cluster=cluster, paths=[path])
    posture_evaluate()


@pytest.fixture
def scratch(small_world, tmp_path):
    _sync(small_world, tmp_path, *copy.deepcopy(SCRATCH))
    return small_world


def _page(user, url: str) -> str:
    client = Client()
    client.force_login(user)
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


def test_the_claim_action_groups_the_namespaces_findings(scratch, personas):
    lead = personas["security_lead"]
    mine = Finding.objects.filter(status="open", tenants__slug="unclassified")
    in_scratch = sorted(
        mine.filter(subject_namespace="scratch").values_list("id", flat=True)
    ) + sorted(
        mine.filter(subject_kind="Namespace", subject_name="scratch").values_list("id", flat=True)
    )
    rows = api_client(lead).get("/api/v1/actions/?page_size=100").json()["results"]
    (claim,) = [a for a in rows if a["title"].startswith("Claim namespace scratch:")]
    assert sorted(claim["finding_ids"]) == sorted(in_scratch)
    assert {"POD-001", "TEN-001"} <= set(claim["checks"])
    # It helps the tenants beside the scratch pod too: its POD-001 reaches their node.
    pod001 = Finding.objects.get(check_id="POD-001", subject_namespace="scratch", status="open")
    assert claim["tenants"] == sorted({"unclassified", *pod001.evidence["neighbours"]})
    assert claim["title"].endswith(f"closes {len(in_scratch)} findings")
    assert not any(
        a["title"].startswith("Remove privileged from") and "scratch/" in a["title"] for a in rows
    )
    # Its findings' link lists them.
    listed = api_client(lead).get(claim["findings_url"]).json()["results"]
    assert sorted(f["id"] for f in listed) == sorted(in_scratch)


def test_its_findings_say_the_claim_first(scratch, personas):
    lead = personas["security_lead"]
    pod001 = Finding.objects.get(check_id="POD-001", subject_namespace="scratch", status="open")
    for url in (f"/api/v1/findings/{pod001.pk}/", "/api/v1/findings/?check=POD-001"):
        data = api_client(lead).get(url).json()
        row = data if "id" in data else next(r for r in data["results"] if r["id"] == pod001.pk)
        assert row["remediation"].startswith("First claim namespace scratch: no tenant claims it")
        assert "Remove `securityContext.privileged: true`" in row["remediation"]
    # A tenant's own finding keeps the check's remediation alone (the scratch pod's POD-001
    # affects alpha too, as its neighbour: it is still the claim's).
    listed = api_client(lead).get("/api/v1/findings/?tenant=alpha").json()["results"]
    others = [r for r in listed if r["subject_namespace"] != "scratch"]
    assert others and not any(r["remediation"].startswith("First claim") for r in others)
    html = _page(lead, f"/findings/{pod001.pk}/")
    note = html.index('id="claim-first"')
    assert note < html.index("Fix, once a tenant")
    assert "First claim namespace scratch" in html[note:]


def test_the_sarif_export_says_the_claim_on_its_results_and_keeps_the_rule_help(scratch, personas):
    lead = api_client(personas["security_lead"])
    pod001 = Finding.objects.get(check_id="POD-001", subject_namespace="scratch", status="open")
    answer = lead.get("/api/v1/findings/export/?format=sarif&status=open")
    (run,) = json.loads(content(answer))["runs"]
    results = {r["properties"]["findingId"]: r for r in run["results"]}
    message = results[pod001.pk]["message"]["text"]
    assert message.startswith(pod001.title)
    assert "First claim namespace scratch: no tenant claims it" in message
    # As the JSON export says it.
    row = lead.get(f"/api/v1/findings/{pod001.pk}/").json()
    assert row["remediation"].startswith(message.split("\n\n", 1)[1])
    # The rule's help is every result's: the check's own remediation, without the claim.
    (rule,) = [r for r in run["tool"]["driver"]["rules"] if r["id"] == "POD-001"]
    assert rule["help"]["text"] == CHECKS["POD-001"].remediation
    # A tenant's finding: its title alone.
    others = [
        r
        for r in results.values()
        if "alpha" in r["properties"]["tenants"] and r["properties"]["findingId"] != pod001.pk
    ]
    assert others and not any("First claim" in r["message"]["text"] for r in others)


def test_the_unclassified_tenant_lists_its_namespaces(scratch, personas, tmp_path):
    lead = personas["security_lead"]
    tenants = api_client(lead).get("/api/v1/tenants/").json()["results"]
    assert {t["slug"]: t["namespaces"] for t in tenants}["unclassified"] == ["scratch"]
    assert {t["slug"]: t["namespaces"] for t in tenants}["alpha"]  # claimed ones, as before
    assert "unclaimed: scratch" in _page(lead, "/")
    assert "unclaimed: scratch" in _page(lead, "/tenants/")
    assert re.search(
        r'id="unclaimed-namespaces".*<code>scratch</code>', _page(lead, "/tenants/unclassified/")
    )
    # A long list is capped on the pages, whole in the API.
    names = [f"ns-{i:02}" for i in range(8)]
    Tenant.objects.filter(slug="unclassified").update(unclaimed_namespaces=names)
    assert "ns-04 +3 more" in _page(lead, "/tenants/")
    row = api_client(lead).get("/api/v1/tenants/?trust_class__slug=external").json()["results"]
    assert {t["slug"]: t["namespaces"] for t in row}["unclassified"] == names


def test_claiming_the_namespace_empties_the_list(scratch, personas, tmp_path):
    assert Tenant.objects.get(slug="unclassified").unclaimed_namespaces == ["scratch"]
    labelled = copy.deepcopy(SCRATCH)
    labelled[0]["metadata"]["labels"] = {"gpuposture.io/platform": "true"}
    _sync(scratch, tmp_path, *labelled)
    assert Tenant.objects.get(slug="unclassified").unclaimed_namespaces == []
    assert not Action.objects.filter(title__startswith="Claim namespace").exists()
