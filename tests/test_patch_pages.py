"""The patch SLA (editable by security leads, followed by STACK-005), the bulletin upload
form and URL import API, the node page (exposures with their conditions, device-injection
facts, pods in scope) and the suggested rollout on the patch page."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from inventory.bulletins.patch_refresh import nodes_patch_refresh
from inventory.bulletins.store import bulletins_import_paths
from inventory.models import Bulletin, Node, PatchSla
from posture.models import Finding
from posture.services import posture_evaluate
from tests.conftest import api_client
from tests.realworld import realworld

pytestmark = pytest.mark.django_db


def login(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def import_real(*numbers: str) -> None:
    bulletins_import_paths(paths=[str(realworld("csaf", f"nvidia-{n}.json")) for n in numbers])


def test_sla_defaults_show_and_a_security_lead_changes_them(small_world, personas):
    page = login(personas["platform_engineer"]).get("/patch/").content.decode()
    assert "deployment default" in page and 'href="/patch/sla/"' not in page
    assert login(personas["platform_engineer"]).get("/patch/sla/").status_code == 403
    lead = login(personas["security_lead"])
    assert 'href="/patch/sla/"' in lead.get("/patch/").content.decode()
    refused = lead.post("/patch/sla/", {"critical": "0", "high": "30", "medium": "90", "low": "x"})
    assert refused.status_code == 200 and not PatchSla.objects.exists()
    saved = lead.post("/patch/sla/", {"critical": "5", "high": "30", "medium": "90", "low": "180"})
    assert saved.status_code == 302
    # Only what differs from the default is stored, with who changed it.
    assert list(PatchSla.objects.values_list("severity", "days", "updated_by")) == [
        ("critical", 5, "sec")
    ]
    assert "sec," in lead.get("/patch/").content.decode()


def test_stack_005_follows_the_sla_in_force(small_world, personas):
    import_real("5614", "5630")
    posture_evaluate()
    breached = Finding.objects.filter(check_id="STACK-005", status="open")
    assert breached.exists()  # fixes from 2025: far past the default SLA
    lead = api_client(personas["security_lead"])
    answer = lead.patch(
        "/api/v1/patch-sla/",
        {"critical": 3650, "high": 3650, "medium": 3650, "low": 3650},
        format="json",
    )
    assert answer.status_code == 200 and {r["days"] for r in answer.json()} == {3650}
    posture_evaluate()  # the save queued a score too; run it here to read the result
    assert not Finding.objects.filter(check_id="STACK-005", status="open").exists()


def test_sla_api_validates_and_only_security_leads_write(personas):
    lead = api_client(personas["security_lead"])
    rows = lead.get("/api/v1/patch-sla/").json()
    assert [(r["severity"], r["days"]) for r in rows] == [
        ("critical", 7),
        ("high", 30),
        ("medium", 90),
        ("low", 180),
    ]
    for body in ({"critical": 0}, {"critical": "soon"}, {"urgent": 3}, {}, {"low": 10**6}):
        assert lead.patch("/api/v1/patch-sla/", body, format="json").status_code == 400, body
    for persona in ("platform_engineer", "auditor", "procurement", "viewer_alpha"):
        answer = api_client(personas[persona]).patch(
            "/api/v1/patch-sla/", {"critical": 3}, format="json"
        )
        assert answer.status_code == 403, persona
    assert api_client(None).get("/api/v1/patch-sla/").status_code in (401, 403)
    assert not PatchSla.objects.exists()


def test_upload_form_imports_good_files_and_names_the_refused(small_world, personas):
    good = realworld("csaf", "nvidia-5630.json").read_bytes()
    files = [
        SimpleUploadedFile("5630.json", good, content_type="application/json"),
        SimpleUploadedFile("broken.json", b"{not json", content_type="application/json"),
        SimpleUploadedFile("old.json", json.dumps({"document": {}}).encode()),
    ]
    lead = login(personas["security_lead"])
    page = lead.post("/bulletins/import/", {"files": files, "urls": ""})
    text = page.content.decode()
    assert page.status_code == 200  # stays on the form to show what was refused
    assert "1 imported" in text and "2 refused" in text and "broken.json" in text
    assert "not readable JSON" in text
    assert Bulletin.objects.count() == 1
    assert Node.objects.get(name="gpu-ts-1").patch_status == "below_baseline"
    empty = lead.post("/bulletins/import/", {"urls": ""})
    assert "choose at least one file" in empty.content.decode()
    bad_url = lead.post("/bulletins/import/", {"urls": "file:///etc/passwd"})
    assert "not an http(s) URL" in bad_url.content.decode()
    assert login(personas["auditor"]).get("/bulletins/import/").status_code == 403


def test_upload_form_refuses_an_oversized_file(personas, settings, monkeypatch):
    monkeypatch.setattr("inventory.forms.MAX_DOCUMENT_BYTES", 100)
    big = SimpleUploadedFile("big.json", b"{" + b" " * 200 + b"}")
    page = login(personas["security_lead"]).post("/bulletins/import/", {"files": [big]})
    assert "larger than" in page.content.decode() and not Bulletin.objects.exists()


def test_bulletin_api_url_import_validates_the_list(personas):
    lead = api_client(personas["security_lead"])
    for urls in ("https://x", [], [1], ["https://a/" + "x" * 2100], ["https://a"] * 21):
        answer = lead.post("/api/v1/bulletins/", {"urls": urls}, format="json")
        assert answer.status_code == 400 and "urls" in answer.json()["detail"], urls


def test_node_page_shows_exposures_conditions_and_device_injection(small_world, personas):
    import_real("5659")
    node = Node.objects.get(name="gpu-ts-1")
    node.data["container_toolkit_version"] = "1.17.4"  # as if the toolkit pod said so
    node.save(update_fields=["data"])
    nodes_patch_refresh()
    node.refresh_from_db()
    conditioned = [e for e in node.patch_exposures if e.get("condition")]
    assert conditioned, node.patch_exposures  # nvidia-5659 names CDI-mode conditions
    page = login(personas["platform_engineer"]).get(f"/nodes/lab/{node.name}/")
    text = page.content.decode()
    assert page.status_code == 200
    assert "Applies only if" in text and conditioned[0]["condition"][:30] in text
    assert "CDI device injection" in text and "Device list strategy" in text
    assert "CVE-2025-23266" in text
    bulletin = Bulletin.objects.get()
    assert f'href="/bulletins/{bulletin.pk}/"' in text


def test_node_page_shows_a_tenant_viewer_only_their_pods(small_world, personas):
    node = Node.objects.get(name="gpu-ts-1")
    alpha = login(personas["viewer_alpha"]).get(f"/nodes/lab/{node.name}/").content.decode()
    pods = node.pods.select_related("tenant")
    assert any(p.tenant and p.tenant.slug == "beta" for p in pods)
    for pod in pods:
        if pod.tenant and pod.tenant.slug == "beta":
            assert pod.name not in alpha
        elif pod.tenant and pod.tenant.slug == "alpha":
            assert pod.name in alpha
    assert login(personas["viewer_alpha"]).get("/nodes/lab/no-such-node/").status_code == 404
    assert login(personas["no_role"]).get(f"/nodes/lab/{node.name}/").status_code == 404


def test_patch_page_suggests_a_rollout_for_fleet_readers_only(small_world, personas):
    import_real("5614", "5630")
    page = login(personas["platform_engineer"]).get("/patch/").content.decode()
    assert "Suggested rollout" in page and "canary" in page
    assert "driver R550 550.163.01" in page  # the fix on the node's own branch
    assert "550.90.07" in page  # the version to roll back to
    viewer = login(personas["viewer_alpha"]).get("/patch/").content.decode()
    assert "Suggested rollout" not in viewer


def test_bulletins_filter_by_cve_component_and_text_on_page_and_api(personas):
    import_real("5614", "5630", "5659")
    ids = dict(Bulletin.objects.values_list("tracking_id", "pk"))
    client = login(personas["auditor"])

    def page(query: str) -> set[str]:
        text = client.get(f"/bulletins/?{query}").content.decode()
        return {t for t, pk in ids.items() if f'href="/bulletins/{pk}/"' in text}

    assert page("") == set(ids)
    assert page("cve=cve-2025-23266") == {"5659"}  # case does not matter
    assert page("component=container_toolkit") == {"5659"}
    assert page("component=driver") == {"5614", "5630"}
    assert page("q=zzz-nothing") == set()
    assert "No bulletin matches" in client.get("/bulletins/?q=zzz").content.decode()
    api = api_client(personas["auditor"])
    rows = api.get("/api/v1/bulletins/?cve=CVE-2025-23266").json()["results"]
    assert [r["tracking_id"] for r in rows] == ["5659"]
    assert api.get("/api/v1/bulletins/?component=nonsense").status_code == 400


def test_nodes_page_filters_by_node_kind_with_plain_words(small_world, personas):
    client = login(personas["platform_engineer"])
    page = client.get("/nodes/").content.decode()
    assert '<option value="unknown" selected>all nodes</option>' in page
    assert "Unknown" not in page
    gpu_only = client.get("/nodes/?gpu=true").content.decode()
    assert "gpu-ts-1" in gpu_only and "cpu-1" not in gpu_only
    cpu_only = client.get("/nodes/?gpu=false").content.decode()
    assert "cpu-1" in cpu_only and "gpu-ts-1" not in cpu_only


def test_node_and_patch_pages_say_who_upgrades_each_component(small_world, personas):
    """The sync resolves who upgrades each component (inventory.stack_managers): the node page
    shows it per component, the patch page per node row and per rollout wave."""
    import_real("5614", "5630")
    node = Node.objects.get(name="gpu-ts-1")
    by = node.data["upgrade_by"]
    assert by["driver"] and by["firmware"] == "firmware update", by
    page = login(personas["platform_engineer"]).get(f"/nodes/lab/{node.name}/").content.decode()
    assert f'data-upgrade-by="{by["driver"]}">upgraded by: {by["driver"]}</div>' in page
    patch = login(personas["platform_engineer"]).get("/patch/").content.decode()
    assert "<th>Upgraded by</th>" in patch
    assert f"<div>driver R550: {by['driver']}</div>" in patch  # the wave
    assert f"<div>driver: {by['driver']}</div>" in patch  # the node's row
    # A node synced before this was resolved says so, not a guess.
    del node.data["upgrade_by"]
    node.save(update_fields=["data"])
    page = login(personas["platform_engineer"]).get(f"/nodes/lab/{node.name}/").content.decode()
    assert "upgraded by: not resolved" in page
    patch = login(personas["platform_engineer"]).get("/patch/").content.decode()
    assert "<div>driver R550: not resolved</div>" in patch
