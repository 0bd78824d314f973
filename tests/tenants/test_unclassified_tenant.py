"""The system tenant `unclassified` (issue 17 item 1): kept by the posture run on the class
GPUPOSTURE_UNCLASSIFIED_CLASS names, never claimed, edited or viewed as a tenant; TEN-001 and
the findings of an unclassified namespace's pods affect it, and the overview lists it for the
roles that read every tenant, never for a tenant viewer."""

from __future__ import annotations

import copy
import json

import pytest
from django.core.exceptions import ImproperlyConfigured

from inventory.services import cluster_sync_from_snapshot
from posture.models import Finding, TenantScore
from posture.read_model import tenant_infos
from posture.selectors import tenants_overview
from posture.services import posture_evaluate
from tenants.checks import unclassified_class_check
from tenants.models import Tenant, TrustClass
from tenants.services import unclassified_tenant_ensure
from tenants.spec import TenantSpecError, parse_tenants_document
from tests.conftest import api_client, load_json, world_snapshot_path

SCRATCH = [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "scratch", "labels": {}}},
    {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "miner-0", "namespace": "scratch", "uid": "u-miner-0"},
        "spec": {
            "nodeName": "gpu-ts-1",
            "containers": [
                {
                    "name": "main",
                    "image": "docker.io/library/ubuntu:22.04",
                    "securityContext": {"privileged": True},
                    "resources": {"limits": {"nvidia.com/gpu": "1"}},
                }
            ],
        },
        "status": {"phase": "Running"},
    },
]


@pytest.fixture
def scratch_world(small_world, tmp_path):
    """The small world plus a namespace no tenant claims running a privileged GPU pod."""
    objects = copy.deepcopy(load_json("small-cluster.json")["items"]) + SCRATCH
    path = tmp_path / "with-scratch.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    cluster_sync_from_snapshot(cluster=small_world, paths=[path])
    posture_evaluate()
    return small_world


def test_ten001_and_the_pods_findings_affect_the_unclassified_tenant(scratch_world):
    (ten,) = Finding.objects.filter(check_id="TEN-001", status="open")
    assert (ten.subject_kind, ten.subject_name, ten.severity) == ("Namespace", "scratch", "high")
    assert list(ten.tenants.values_list("slug", flat=True)) == ["unclassified"]
    pod001 = Finding.objects.get(check_id="POD-001", subject_namespace="scratch")
    # The party's own finding; its privileged pod also reaches alpha's and beta's pods on
    # its node (posture.rules.pod.neighbours).
    assert pod001.evidence["tenant"] == "unclassified"
    assert list(pod001.tenants.values_list("slug", flat=True)) == ["alpha", "beta", "unclassified"]
    assert sorted(pod001.evidence["neighbours"]) == ["alpha", "beta"]
    assert pod001.evidence["trust_class"] == "external"
    unclassified = Tenant.objects.get(slug="unclassified")
    assert (unclassified.is_system, unclassified.trust_class.slug) == (True, "external")
    assert TenantScore.objects.filter(tenant=unclassified).exists()


def test_the_overview_lists_unclassified_for_leads_never_for_a_viewer(scratch_world, personas):
    lead = {t.slug for t in tenants_overview(personas["security_lead"])}
    engineer = {t.slug for t in tenants_overview(personas["platform_engineer"])}
    assert "unclassified" in lead and "unclassified" in engineer
    viewer = {t.slug for t in tenants_overview(personas["viewer_alpha"])}
    assert viewer == {"alpha"}
    response = api_client(personas["viewer_alpha"]).get("/api/v1/findings/?check=TEN-001")
    assert response.status_code == 200
    assert response.json()["count"] == 0
    page = api_client(personas["security_lead"]).get("/api/v1/findings/?check=TEN-001")
    assert page.json()["count"] == 1


def api_slugs(user) -> set[str]:
    return {row["slug"] for row in api_client(user).get("/api/v1/tenants/").json()["results"]}


def test_unclassified_is_no_row_while_nothing_is_unclassified(small_world, personas, tmp_path):
    lead = personas["security_lead"]
    assert "unclassified" not in {t.slug for t in tenants_overview(lead)}
    assert not TenantScore.objects.filter(tenant__slug="unclassified").exists()
    # A sandbox appears, then is claimed: the row comes, then goes with a last score of 0 risk.
    objects = copy.deepcopy(load_json("small-cluster.json")["items"]) + SCRATCH
    path = tmp_path / "with-scratch.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    cluster_sync_from_snapshot(cluster=small_world, paths=[path])
    posture_evaluate()
    assert "unclassified" in {t.slug for t in tenants_overview(lead)}
    assert "unclassified" in api_slugs(lead)
    assert "unclassified" not in api_slugs(personas["viewer_alpha"])
    cluster_sync_from_snapshot(cluster=small_world, paths=[world_snapshot_path()])
    posture_evaluate()
    assert "unclassified" not in {t.slug for t in tenants_overview(lead)}
    assert api_slugs(lead) == {"alpha", "beta"}
    last = TenantScore.objects.filter(tenant__slug="unclassified").order_by("-id").first()
    assert last.risk == 0


def test_the_system_tenant_is_not_a_registry_tenant(scratch_world):
    assert "unclassified" not in {t.slug for t in tenant_infos()}


def test_the_tenants_file_cannot_claim_or_edit_it():
    document = {"tenants": [{"slug": "unclassified", "name": "Mine", "trust_class": "internal"}]}
    with pytest.raises(TenantSpecError, match="reserved"):
        parse_tenants_document(document)


def test_no_tenant_may_take_the_platform_party_name():
    # A workload's `party` is a tenant slug, `platform` or `unclassified`: a tenant slugged
    # `platform` would read as the platform's own pods.
    document = {"tenants": [{"slug": "platform", "name": "Platform", "trust_class": "platform"}]}
    with pytest.raises(TenantSpecError, match="reserved for the platform"):
        parse_tenants_document(document)


@pytest.mark.django_db
def test_ensure_follows_the_setting_and_refuses_an_unknown_class(settings):
    settings.GPUPOSTURE_UNCLASSIFIED_CLASS = "sensitive"
    assert unclassified_tenant_ensure().trust_class.slug == "sensitive"
    settings.GPUPOSTURE_UNCLASSIFIED_CLASS = "external"
    assert unclassified_tenant_ensure().trust_class.slug == "external"
    assert Tenant.objects.filter(slug="unclassified").count() == 1
    settings.GPUPOSTURE_UNCLASSIFIED_CLASS = "nosuch"
    with pytest.raises(ImproperlyConfigured, match="nosuch"):
        unclassified_tenant_ensure()


@pytest.mark.django_db
def test_startup_check_names_a_class_that_does_not_exist(settings):
    assert unclassified_class_check() == []
    settings.GPUPOSTURE_UNCLASSIFIED_CLASS = "nosuch"
    (error,) = unclassified_class_check()
    assert "nosuch" in error.msg and "external" in error.hint
    TrustClass.objects.create(slug="nosuch", name="No such")
    assert unclassified_class_check() == []


@pytest.mark.django_db
def test_a_sharing_request_for_unclassified_is_refused(personas, small_world):
    client = api_client(personas["platform_engineer"])
    response = client.post(
        "/api/v1/sharing-requests/",
        {
            "tenant": "unclassified",
            "cluster": "lab",
            "mode": "time_slicing",
            "justification": "share the scratch GPUs",
        },
        format="json",
    )
    assert response.status_code == 400


def test_checks_catalogue_lists_ten001_with_rationale_remediation_mappings(personas):
    response = api_client(personas["security_lead"]).get("/api/v1/checks/")
    assert response.status_code == 200
    rows = response.json()["results"]
    (ten,) = [r for r in rows if r["id"] == "TEN-001"]
    assert ten["severity"] == "high"
    assert "tenants file" in ten["remediation"] and "platform" in ten["remediation"]
    assert ten["rationale"]
    assert any("CM-8" in m for m in ten["mappings"]) and any("AC-2" in m for m in ten["mappings"])


def test_the_unclassified_page_explains_it_to_a_lead_and_hides_from_a_viewer(
    scratch_world, personas, client
):
    client.force_login(personas["security_lead"])
    page = client.get("/tenants/unclassified/")
    assert page.status_code == 200
    text = page.content.decode()
    assert "Unclassified" in text and "GPUPOSTURE_UNCLASSIFIED_CLASS" in text
    assert "scratch" in text  # its TEN-001 finding names the namespace
    client.force_login(personas["viewer_alpha"])
    assert client.get("/tenants/unclassified/").status_code == 404
    overview = client.get("/").content.decode()
    assert "Unclassified" not in overview


@pytest.mark.django_db
def test_namespaces_nobody_owns_are_never_judged_as_the_platform(settings):
    """DESIGN §3: nothing unknown is ever judged as platform, whatever the setting says."""
    settings.GPUPOSTURE_UNCLASSIFIED_CLASS = "platform"
    (error,) = unclassified_class_check()
    assert error.id == "gpuposture.E102"
    with pytest.raises(ImproperlyConfigured, match="never judged"):
        unclassified_tenant_ensure()
