"""DESIGN §8: filters and detail routes take the object's name or slug, and still its id."""

from __future__ import annotations

import pytest

from inventory.models import Cluster
from telemetry.models import ResetAttestation
from tenants.models import Tenant
from tests.conftest import api_client, world_snapshot_path

pytestmark = pytest.mark.django_db


def _count(client, path: str) -> int:
    response = client.get(path)
    assert response.status_code == 200, response.content
    return response.json()["count"]


def _refused(client, path: str, param: str) -> str:
    """A filter naming nothing: a 400 naming the parameter (test_contract_filter_errors.py)."""
    response = client.get(path)
    assert response.status_code == 400, response.content
    return " ".join(response.json()["errors"][param])


@pytest.mark.parametrize(
    "resource", ["findings", "actions", "nodes", "workloads", "sync-runs", "sharing-requests"]
)
def test_cluster_filter_takes_the_name_or_the_id(small_world, personas, resource):
    client = api_client(personas["security_lead"])
    by_name = _count(client, f"/api/v1/{resource}/?cluster=lab")
    assert _count(client, f"/api/v1/{resource}/?cluster={small_world.id}") == by_name
    assert "elsewhere" in _refused(client, f"/api/v1/{resource}/?cluster=elsewhere", "cluster")
    if resource != "sharing-requests":  # the small world has none
        assert by_name > 0


@pytest.mark.parametrize("resource", ["findings", "actions", "workloads"])
def test_tenant_filter_takes_the_slug_the_name_or_the_id(small_world, personas, resource):
    client = api_client(personas["security_lead"])
    alpha = Tenant.objects.get(slug="alpha")
    by_slug = _count(client, f"/api/v1/{resource}/?tenant=alpha")
    assert by_slug > 0
    assert _count(client, f"/api/v1/{resource}/?tenant={alpha.id}") == by_slug
    assert _count(client, f"/api/v1/{resource}/?tenant=Team Alpha") == by_slug
    assert "nobody" in _refused(client, f"/api/v1/{resource}/?tenant=nobody", "tenant")


def test_a_viewer_naming_another_tenant_by_id_is_refused_as_if_it_did_not_exist(
    small_world, personas
):
    beta = Tenant.objects.get(slug="beta")
    client = api_client(personas["viewer_alpha"])
    for asked in (str(beta.id), "Beta Corp", "999999", "Nobody Corp"):
        message = _refused(client, f"/api/v1/findings/?tenant={asked}", "tenant")
        assert message == (
            f"no tenant {asked!r} that you may see; give a tenant's slug, name or id. "
            "Accepted: alpha."
        )


def test_reset_attestations_filter_by_cluster_and_tenant(small_world, personas):
    alpha, beta = Tenant.objects.get(slug="alpha"), Tenant.objects.get(slug="beta")
    ResetAttestation.objects.create(
        cluster=small_world,
        node="gpu-node-1",
        reset_at="2026-01-01T00:00:00Z",
        method="gpu_reset",
        previous_tenant=alpha,
        next_tenant=beta,
        recorded_by="plat",
    )
    client = api_client(personas["security_lead"])
    assert _count(client, "/api/v1/reset-attestations/?cluster=lab") == 1
    assert _count(client, f"/api/v1/reset-attestations/?cluster={small_world.id}") == 1
    _refused(client, "/api/v1/reset-attestations/?cluster=elsewhere", "cluster")
    assert _count(client, "/api/v1/reset-attestations/?tenant=beta") == 1
    assert _count(client, "/api/v1/reset-attestations/?tenant=Team Alpha") == 1
    Tenant.objects.create(slug="gamma", name="Gamma", trust_class=alpha.trust_class)
    assert _count(client, "/api/v1/reset-attestations/?tenant=gamma") == 0


def test_cluster_routes_take_the_name_or_the_id(small_world, personas):
    client = api_client(personas["security_lead"])
    by_id = client.get(f"/api/v1/clusters/{small_world.id}/")
    assert by_id.status_code == 200 and by_id.json()["name"] == "lab"
    assert client.get(f"/api/v1/clusters/{small_world.id}/checklist/").status_code == 200
    pack = client.get(f"/api/v1/clusters/{small_world.id}/policy-pack/?format=json")
    assert pack.status_code == 200 and "items" in pack.json()
    assert client.get("/api/v1/clusters/999999/").status_code == 404


def test_sync_by_cluster_id_returns_the_run(small_world, personas):
    Cluster.objects.filter(pk=small_world.pk).update(
        source="snapshot", snapshot_paths=[str(world_snapshot_path())]
    )
    client = api_client(personas["platform_engineer"])
    response = client.post(f"/api/v1/clusters/{small_world.id}/sync/")
    assert response.status_code in (200, 202), response.content
    run = response.json()
    assert run["cluster"] == "lab" and run["status"] in ("running", "succeeded")
    assert client.get(f"/api/v1/sync-runs/{run['id']}/").status_code == 200


def test_utilisation_names_its_cluster_by_name_or_id_and_refuses_an_unknown_one(
    small_world, personas
):
    client = api_client(personas["security_lead"])
    by_id = client.get(f"/api/v1/utilisation/?cluster={small_world.id}")
    assert by_id.status_code == 200 and by_id.json()["cluster"] == "lab"
    assert client.get("/api/v1/utilisation/?cluster=lab").json()["cluster"] == "lab"
    unknown = client.get("/api/v1/utilisation/?cluster=nowhere")
    assert unknown.status_code == 400 and "nowhere" in str(unknown.json()["errors"])
