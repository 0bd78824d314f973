"""Sharing requests as a peer reads DESIGN: the mode under its §2 name `sharing_mode` as well
as `mode`, and the tenant and cluster by id as well as by slug or name (§8)."""

from __future__ import annotations

import pytest

from inventory.models import Cluster
from tenants.models import SharingRequest, Tenant
from tests.conftest import api_client

pytestmark = pytest.mark.django_db

URL = "/api/v1/sharing-requests/"
BODY = {"tenant": "alpha", "cluster": "lab", "justification": "fits one GPU instance"}


def test_sharing_mode_is_taken_and_answered_beside_mode(small_world, personas):
    engineer = api_client(personas["platform_engineer"])
    created = engineer.post(URL, {**BODY, "sharing_mode": "mig_gi"}, format="json")
    assert created.status_code == 201, created.content
    assert (created.json()["mode"], created.json()["sharing_mode"]) == ("mig_gi", "mig_gi")
    assert SharingRequest.objects.get(pk=created.json()["id"]).mode == "mig_gi"
    listed = engineer.get(URL).json()["results"][0]
    assert listed["sharing_mode"] == listed["mode"] == "mig_gi"


def test_the_list_filters_by_sharing_mode_as_by_mode(small_world, personas):
    engineer = api_client(personas["platform_engineer"])
    for mode in ("mig_gi", "vgpu_fixed"):
        assert engineer.post(URL, {**BODY, "mode": mode}, format="json").status_code == 201
    by_alias = engineer.get(URL, {"sharing_mode": "mig_gi"}).json()
    assert [r["sharing_mode"] for r in by_alias["results"]] == ["mig_gi"]
    assert engineer.get(URL, {"mode": "vgpu_fixed"}).json()["count"] == 1
    assert engineer.get(URL, {"sharing_mode": "warp"}).status_code == 400


def test_both_names_agreeing_is_fine_differing_is_a_400_naming_both(small_world, personas):
    engineer = api_client(personas["platform_engineer"])
    same = {**BODY, "mode": "vgpu_fixed", "sharing_mode": "vgpu_fixed"}
    assert engineer.post(URL, same, format="json").status_code == 201
    differ = {**BODY, "mode": "mig_gi", "sharing_mode": "time_slicing"}
    refused = engineer.post(URL, differ, format="json")
    assert refused.status_code == 400
    (message,) = refused.json()["errors"]["sharing_mode"]
    assert "mode 'mig_gi'" in message and "sharing_mode 'time_slicing'" in message
    assert SharingRequest.objects.count() == 1


def test_neither_name_or_a_bad_one_is_a_400(small_world, personas):
    engineer = api_client(personas["platform_engineer"])
    missing = engineer.post(URL, BODY, format="json")
    assert missing.status_code == 400
    assert "sharing_mode" in missing.json()["errors"]["mode"][0]
    bad = engineer.post(URL, {**BODY, "sharing_mode": "warp"}, format="json")
    assert bad.status_code == 400 and "not a valid choice" in str(bad.json())


def test_tenant_and_cluster_by_id(small_world, personas):
    alpha = Tenant.objects.get(slug="alpha")
    body = {**BODY, "tenant": alpha.pk, "cluster": str(small_world.pk), "mode": "mig_gi"}
    owner = api_client(personas["viewer_alpha"])
    created = owner.post(URL, body, format="json")
    assert created.status_code == 201, created.content
    assert (created.json()["tenant"], created.json()["cluster"]) == ("alpha", "lab")
    by_string = {**body, "tenant": str(alpha.pk), "mode": "vgpu_fixed"}
    assert owner.post(URL, by_string, format="json").status_code == 201


def test_an_id_reaches_no_more_than_a_slug_does(small_world, personas):
    """Another tenant's id reads as "does not exist", exactly as its slug does."""
    alpha = Tenant.objects.get(slug="alpha")
    beta = api_client(personas["viewer_beta"])
    refused = beta.post(URL, {**BODY, "tenant": alpha.pk, "mode": "mig_gi"}, format="json")
    assert refused.status_code == 400 and "does not exist" in str(refused.json())
    unknown = {**BODY, "cluster": 999999, "mode": "mig_gi"}
    refused = api_client(personas["platform_engineer"]).post(URL, unknown, format="json")
    assert refused.status_code == 400 and "does not exist" in str(refused.json())
    # Not a way around the roles: an auditor may not ask, by id or by slug.
    auditor = api_client(personas["auditor"])
    assert auditor.post(URL, {**BODY, "tenant": alpha.pk, "mode": "mig_gi"}).status_code == 403


def test_a_cluster_named_with_digits_is_found_by_name_first(small_world, personas):
    # Named as the lab cluster's id: the name wins, as on the cluster routes.
    digits = Cluster.objects.create(name=str(small_world.pk))
    engineer = api_client(personas["platform_engineer"])
    body = {**BODY, "cluster": digits.name, "mode": "mig_gi"}
    created = engineer.post(URL, body, format="json")
    assert created.status_code == 201, created.content
    assert created.json()["cluster"] == digits.name
