"""A bulletin marked TLP:AMBER is named nowhere a role that may not read it looks: not on the
node page or in the node API (exposures, not-affected records, notes), not on /patch/, not in
the STACK-00x findings (API, pages, JSON / CSV / SARIF exports). The node's patch status and
the findings stay: that the node is exposed is the tenant's to know, not to which advisory.
A TLP:CLEAR bulletin stays named for everyone; a security lead reads both."""

from __future__ import annotations

import pytest
from django.test import Client

from demo.bulletins import cdi_bulletin, toolkit_bulletin
from inventory.bulletins.patch_refresh import nodes_patch_refresh
from inventory.bulletins.store import ImportResult, bulletin_import
from inventory.models import Bulletin, Node
from inventory.presenter import hidden_scope_for
from posture.models import Finding
from posture.services import posture_evaluate
from tenants.models import Tenant
from tenants.redaction import HIDDEN_ADVISORY
from tests.conftest import api_client, content

pytestmark = pytest.mark.django_db

AMBER_ID = "demo-5659"
# What identifies the AMBER bulletin: its id, a CVE only it names, its title's words. (Its
# other CVE, CVE-2025-23266, is quoted by STACK-002's own rationale, public text.)
AMBER_WORDS = (AMBER_ID, "CVE-2025-23267", "July 2025")
CLEAR_WORDS = ("demo-5616", "CVE-2025-23359")
NODE = "gpu-ts-1"


@pytest.fixture
def marked_world(small_world):
    """gpu-ts-1 (alpha and beta) runs toolkit 1.17.3: exposed to demo-5616 (TLP:CLEAR) and to
    demo-5659 (TLP:AMBER), both found by STACK-002/003/005."""
    for node in Node.objects.filter(is_gpu_node=True):
        node.data["container_toolkit_version"] = "1.17.3"
        node.save()
    for bulletin in (toolkit_bulletin, cdi_bulletin):
        bulletin_import(data=bulletin(), source="test", result=ImportResult())
    Bulletin.objects.filter(tracking_id=AMBER_ID).update(tlp="AMBER")
    Bulletin.objects.exclude(tracking_id=AMBER_ID).update(tlp="CLEAR")
    nodes_patch_refresh()
    posture_evaluate()
    node = Node.objects.get(name=NODE)
    assert node.patch_status == "below_baseline"
    assert {e["advisory_id"] for e in node.patch_exposures} == {AMBER_ID, "demo-5616"}
    assert Finding.objects.filter(check_id__in=("STACK-002", "STACK-005")).count() == 2
    return small_world


def surfaces(user) -> dict[str, str]:
    """Every surface that shows a node's patch records or a STACK finding, as text."""
    page = Client()
    page.force_login(user)
    api = api_client(user)
    node = Node.objects.get(name=NODE)
    alpha = Tenant.objects.get(slug="alpha")
    texts = {
        "node page": page.get(f"/nodes/lab/{NODE}/"),
        "node api": api.get(f"/api/v1/nodes/{node.pk}/"),
        "node list api": api.get("/api/v1/nodes/"),
        "patch page": page.get("/patch/"),
        "findings api": api.get("/api/v1/findings/?check=STACK-002"),
        "tenant page": page.get("/tenants/alpha/"),
        "posture api": api.get(f"/api/v1/tenants/{alpha.pk}/posture/"),
        "actions api": api.get("/api/v1/actions/"),
        "cluster checklist api": api.get("/api/v1/clusters/lab/checklist/"),
        "cluster page": page.get("/clusters/lab/"),
        "home": page.get("/home/"),
    }
    for kind in ("json", "csv", "sarif", "openreports", "policyreport"):
        texts[f"export {kind}"] = api.get(f"/api/v1/findings/export/?format={kind}")
    for finding in Finding.objects.filter(check_id__startswith="STACK-00"):
        texts[f"{finding.check_id} page"] = page.get(f"/findings/{finding.pk}/")
        texts[f"{finding.check_id} api"] = api.get(f"/api/v1/findings/{finding.pk}/")
    return {
        name: content(r).decode() if r.status_code == 200 else f"status {r.status_code}"
        for name, r in texts.items()
    }


@pytest.mark.parametrize("persona", ["viewer_alpha", "procurement"])
def test_an_amber_bulletin_is_named_on_no_surface_a_role_may_not_read(
    marked_world, personas, persona
):
    shown = surfaces(personas[persona])
    leaks = [
        f"{name}: {word}" for name, text in shown.items() for word in AMBER_WORDS if word in text
    ]
    assert not leaks, leaks
    if persona == "viewer_alpha":  # procurement sees no node and no finding at all
        for name in ("node page", "node api", "patch page", "STACK-002 page", "posture api"):
            assert "status" not in shown[name][:7], (name, shown[name][:80])
        # The CLEAR bulletin stays named, and the status stays what it is.
        for name in ("node page", "node api", "STACK-002 api", "export csv", "export sarif"):
            assert all(w in shown[name] for w in CLEAR_WORDS), name
        assert HIDDEN_ADVISORY in shown["node page"] and HIDDEN_ADVISORY in shown["node api"]
        assert "below_baseline" in shown["node api"]


def test_the_hidden_exposure_keeps_the_tenants_facts(marked_world, personas):
    api = api_client(personas["viewer_alpha"])
    node = api.get(f"/api/v1/nodes/{Node.objects.get(name=NODE).pk}/").json()
    assert node["patch_status"] == "below_baseline"
    hidden = [e for e in node["patch_exposures"] if e["advisory_id"] == HIDDEN_ADVISORY]
    assert hidden and all(e["cves"] == [] and e["max_cvss"] is None for e in hidden)
    assert all(e["condition"] is None for e in hidden)  # the vendor's words
    assert {e["component"] for e in hidden} >= {"container_toolkit"}
    assert all(e["installed"] and e["fixed_version"] and e["released"] for e in hidden)
    # Same keys as a readable one: the schema does not change with the marking.
    clear = next(e for e in node["patch_exposures"] if e["advisory_id"] == "demo-5616")
    assert all(set(e) == set(clear) for e in hidden)
    finding = api.get("/api/v1/findings/?check=STACK-002").json()["results"][0]
    evidence = finding["evidence"]
    assert evidence["cves"] == ["CVE-2025-23359"]
    assert evidence["condition_unverified"] == []
    assert finding["severity"] == "critical"  # the AMBER fix's severity still counts


def test_a_security_lead_reads_both(marked_world, personas):
    shown = surfaces(personas["security_lead"])
    for name in ("node page", "node api", "STACK-002 api", "export json"):
        assert all(w in shown[name] for w in (*AMBER_WORDS[:2], *CLEAR_WORDS)), name
        assert HIDDEN_ADVISORY not in shown[name]


def test_the_scope_names_the_hidden_advisories_and_only_their_own_cves(marked_world, personas):
    for persona in ("viewer_alpha", "procurement"):
        scope = hidden_scope_for(personas[persona])
        assert scope.advisories == {AMBER_ID}
        assert scope.cves == {"CVE-2025-23266", "CVE-2025-23267"}
    # A CVE a readable bulletin also names is not hidden.
    amber = Bulletin.objects.get(tracking_id=AMBER_ID)
    Bulletin.objects.filter(tracking_id="demo-5616").update(cves=["CVE-2025-23359", *amber.cves])
    assert hidden_scope_for(personas["viewer_alpha"]).cves == frozenset()
    assert hidden_scope_for(personas["security_lead"]) is None
