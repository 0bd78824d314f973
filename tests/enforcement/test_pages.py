"""The pack through the API, the page and the CLI, on the small synced world (alpha internal
and beta external time-sliced together on one GPU node), with each role's view of it."""

from __future__ import annotations

import io
import zipfile

import pytest
import yaml
from django.core.management import CommandError, call_command
from django.http import HttpResponse
from django.test import Client

from enforcement.build import CHECKS, MANAGED_BY
from enforcement.models import GeneratedPack
from enforcement.packs import PackError, policy_pack
from posture.rules import CHECKS as CATALOGUE
from tenants.models import Tenant, TenantNamespace
from tests.conftest import api_client

pytestmark = pytest.mark.django_db

PACK = "/api/v1/clusters/lab/policy-pack/"
PREVIEW = "/api/v1/clusters/lab/policy-pack/preview/"


def page(user, query: str = "") -> HttpResponse:
    client = Client()
    client.force_login(user)
    # The test client's response type exists only in django-stubs.
    return client.get(f"/enforcement/?cluster=lab{query}")  # type: ignore[return-value]


def test_policy_pack_is_the_public_entry_point(small_world):
    for dialect in ("vap", "kyverno"):
        objects = policy_pack(small_world, dialect=dialect, mode="enforce")
        assert objects and all(o["metadata"]["labels"][MANAGED_BY] == "gpuposture" for o in objects)
        assert all(o["metadata"]["annotations"][CHECKS] for o in objects)
    with pytest.raises(PackError, match="vap"):
        policy_pack(small_world, dialect="gatekeeper", mode="audit")
    with pytest.raises(PackError, match="enforce"):
        policy_pack(small_world, dialect="vap", mode="warn")


def test_api_gives_the_pack_as_yaml_and_json(small_world, personas):
    client = api_client(personas["security_lead"])
    response = client.get(PACK + "?dialect=vap&mode=enforce")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/yaml")
    documents = list(yaml.safe_load_all(response.content))
    bindings = [d for d in documents if d["kind"] == "ValidatingAdmissionPolicyBinding"]
    assert bindings and all(b["spec"]["validationActions"] == ["Deny"] for b in bindings)
    selected = {
        ns
        for b in bindings
        if "matchResources" in b["spec"]
        for ns in b["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"][0]["values"]
    }
    assert "team-alpha" in selected
    assert not selected & {"kube-system", "gpu-operator"}  # platform namespaces are not bound
    as_json = client.get(PACK + "?dialect=vap&mode=enforce&format=json").json()
    assert as_json["items"] == documents
    kyverno = client.get(PACK + "?dialect=kyverno&format=json").json()["items"]
    policies = [d for d in kyverno if d["kind"] == "ClusterPolicy"]
    assert policies and all(p["spec"]["validationFailureAction"] == "Audit" for p in policies)


def test_api_refuses_bad_arguments_with_a_message(small_world, personas):
    client = api_client(personas["auditor"])
    response = client.get(PACK + "?dialect=gatekeeper")
    assert response.status_code == 400
    assert "vap" in response.json()["detail"]
    assert client.get(PACK + "?format=xml").status_code == 400
    assert client.get(PREVIEW + "?mode=later").status_code == 400
    assert client.get("/api/v1/clusters/nope/policy-pack/").status_code == 404


def test_preview_lists_what_would_be_denied(small_world, personas):
    rows = api_client(personas["platform_engineer"]).get(PREVIEW).json()
    assert rows, "the small world's beta runs outside an external pool"
    for row in rows:
        assert set(row) == {"namespace", "kind", "name", "rule", "check", "message"}
        assert row["check"] in CATALOGUE
    kyverno = api_client(personas["platform_engineer"]).get(PREVIEW + "?dialect=kyverno").json()
    assert kyverno == rows  # the same expressions in both dialects


def test_tenant_viewers_get_their_namespaces_and_no_pack(small_world, personas):
    lead_rows = api_client(personas["security_lead"]).get(PREVIEW).json()
    viewer = personas["viewer_beta"]
    response = api_client(viewer).get(PACK)
    assert response.status_code == 403
    assert "preview" in response.json()["detail"]
    # beta's namespace is claimed by its label (the registry lists none): still beta's.
    assert not TenantNamespace.objects.filter(tenant__slug="beta").exists()
    rows = api_client(viewer).get(PREVIEW).json()
    assert rows and {r["namespace"] for r in rows} == {"beta-prod"}
    assert rows == [r for r in lead_rows if r["namespace"] == "beta-prod"]
    alpha_rows = api_client(personas["viewer_alpha"]).get(PREVIEW).json()
    assert all(r["namespace"] == "team-alpha" for r in alpha_rows)
    body = page(viewer).content.decode()
    assert "Download YAML" not in body and "team-alpha" not in body
    assert page(viewer, "&download=yaml").status_code == 403
    assert api_client(personas["procurement"]).get(PREVIEW).status_code == 404


def test_page_shows_preview_downloads_and_the_diff(small_world, personas):
    lead = personas["security_lead"]
    first = page(lead)
    assert first.status_code == 200
    body = first.content.decode()
    assert "Would be denied today" in body and "first pack generated" in body
    assert "Not previewed: <code>no-tenant-node-patches</code>" in body
    assert GeneratedPack.objects.count() == 1
    page(lead)  # the same pack again is not stored again
    assert GeneratedPack.objects.count() == 1
    alpha = Tenant.objects.get(slug="alpha")
    TenantNamespace.objects.create(tenant=alpha, name="team-alpha-dev")
    body = page(lead).content.decode()
    assert GeneratedPack.objects.count() == 2
    assert "+        - team-alpha-dev" in body  # the new namespace in the binding's selector
    # the principals line, and the selector of each of alpha's 11 bindings
    assert "12 lines added, 1 removed" in body
    download = page(lead, "&download=yaml")
    assert download["Content-Disposition"].endswith('gpuposture-lab-vap-audit.yaml"')
    assert list(yaml.safe_load_all(download.content))
    archive = zipfile.ZipFile(io.BytesIO(page(lead, "&dialect=kyverno&download=zip").content))
    names = archive.namelist()
    assert "gpuposture-lab-kyverno-audit/kustomization.yaml" in names
    assert any(n.endswith("clusterpolicy-gpuposture-alpha.yaml") for n in names)
    assert page(lead, "&dialect=opa").status_code == 400


def test_export_policy_pack_writes_a_kustomize_directory(small_world, tmp_path):
    err = io.StringIO()
    call_command(
        "export_policy_pack",
        "--cluster",
        "lab",
        "--dialect",
        "kyverno",
        "--mode",
        "enforce",
        "--out",
        str(tmp_path / "pack"),
        stderr=err,
    )
    files = {p.name for p in (tmp_path / "pack").iterdir()}
    assert {"kustomization.yaml", "pack.yaml", "clusterpolicy-gpuposture-nodes.yaml"} <= files
    kustomization = yaml.safe_load((tmp_path / "pack" / "kustomization.yaml").read_text())
    assert set(kustomization["resources"]) == files - {"kustomization.yaml", "pack.yaml"}
    assert "workload denials in the preview" in err.getvalue()
    with pytest.raises(CommandError, match="No cluster named 'nope'"):
        call_command(
            "export_policy_pack",
            "--cluster",
            "nope",
            "--dialect",
            "vap",
            "--out",
            str(tmp_path / "x"),
        )
    with pytest.raises(CommandError):
        call_command(
            "export_policy_pack",
            "--cluster",
            "lab",
            "--dialect",
            "opa",
            "--out",
            str(tmp_path / "x"),
        )
    (tmp_path / "file").write_text("")
    with pytest.raises(CommandError, match="not a directory"):
        call_command(
            "export_policy_pack",
            "--cluster",
            "lab",
            "--dialect",
            "vap",
            "--out",
            str(tmp_path / "file"),
        )
