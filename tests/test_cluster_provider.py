"""Linking a cluster to the provider hosting it: a cluster made by `sync_cluster --snapshot`
(no stored paths: each run gives its own) can be linked through the API and its edit page,
and the link re-scores the cluster at once (PROV-001, checklist item 10), with no manual
`manage.py score`."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.core.management import call_command
from django.test import Client, RequestFactory

from inventory.models import Cluster
from posture.models import Finding
from providers.models import Provider
from tests.conftest import api_client, load_json, world_snapshot_path

pytestmark = pytest.mark.django_db


@pytest.fixture
def committed(django_capture_on_commit_callbacks):
    """Run a change as a request would: its on-commit work (the re-score) runs at the end."""
    return lambda: django_capture_on_commit_callbacks(execute=True)


@pytest.fixture
def cli_world(personas) -> Cluster:
    """The small world (alpha and beta time-sliced on one GPU node) synced as an operator
    does: `sync_cluster --snapshot`, which stores no paths; then scored."""
    from posture.services import posture_evaluate
    from tenants.services import tenants_apply
    from tenants.spec import parse_tenants_document

    tenants_apply(specs=parse_tenants_document(load_json("small-tenants.json")))
    call_command("sync_cluster", cluster="lab", snapshot=[str(world_snapshot_path())])
    posture_evaluate()
    return Cluster.objects.get(name="lab")


@pytest.fixture
def nimbus(db) -> Provider:
    return Provider.objects.create(slug="nimbus", name="Nimbus GPU Cloud")


@pytest.fixture
def snapshot_dir(settings, tmp_path):
    settings.GPUPOSTURE_SNAPSHOT_DIR = tmp_path / "snapshots"
    settings.GPUPOSTURE_SNAPSHOT_DIR.mkdir()
    return settings.GPUPOSTURE_SNAPSHOT_DIR


def page_client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def prov001(client) -> list[dict]:
    return client.get("/api/v1/findings/?check=PROV-001&status=open").json()["results"]


def checklist_item(client, number: int) -> dict:
    items = client.get("/api/v1/clusters/lab/checklist/").json()
    return next(item for item in items if item["number"] == number)


def test_a_cli_made_snapshot_cluster_is_linked_through_the_api_and_rescored(
    cli_world, personas, nimbus, committed
):
    assert (cli_world.source, cli_world.snapshot_paths) == ("snapshot", [])
    engineer = api_client(personas["platform_engineer"])
    lead = api_client(personas["security_lead"])
    assert prov001(lead) == []
    assert checklist_item(lead, 10)["status"] == "pass"

    with committed():
        response = engineer.patch("/api/v1/clusters/lab/", {"provider": "nimbus"}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["provider"] == "nimbus"
    assert response.json()["snapshot_paths"] == []  # still fed by the CLI, nothing invented
    # Nobody ran `score`: the finding and the checklist already follow the link.
    rows = prov001(lead)
    assert [(row["cluster"], row["severity"]) for row in rows] == [("lab", "high")]
    assert checklist_item(lead, 10)["status"] == "fail"

    with committed():
        response = engineer.patch("/api/v1/clusters/lab/", {"provider": None}, format="json")
    assert response.status_code == 200, response.json()
    assert prov001(lead) == []
    assert Finding.objects.get(check_id="PROV-001").status == "resolved"
    assert checklist_item(lead, 10)["status"] == "pass"


def test_a_put_resending_the_stored_reach_settings_is_accepted(cli_world, personas, nimbus):
    engineer = api_client(personas["platform_engineer"])
    body = engineer.get("/api/v1/clusters/lab/").json()
    body.update(provider="nimbus", description="rented H100s")
    response = engineer.put("/api/v1/clusters/lab/", body, format="json")
    assert response.status_code == 200, response.json()
    assert Cluster.objects.get(name="lab").provider == nimbus


@pytest.mark.parametrize(
    "body, says",
    [
        ({"provider": "nimbus", "snapshot_paths": ["/etc/hostname"]}, "must be inside"),
        ({"provider": "nimbus", "snapshot_paths": ["missing.json"]}, "does not exist"),
        ({"source": "in_cluster", "snapshot_paths": ["x.json"]}, "only for the snapshot source"),
        ({"provider": "nimbus", "kube_context": "prod"}, "only for the kubeconfig source"),
    ],
)
def test_a_patch_that_sends_bad_reach_settings_is_still_refused(
    cli_world, personas, nimbus, snapshot_dir, body, says
):
    response = api_client(personas["platform_engineer"]).patch(
        "/api/v1/clusters/lab/", body, format="json"
    )
    assert response.status_code == 400
    assert says in str(response.json()["errors"])
    stored = Cluster.objects.get(name="lab")
    assert (stored.provider, stored.source, stored.snapshot_paths) == (None, "snapshot", [])


def test_a_patch_with_good_paths_stores_them(cli_world, personas, snapshot_dir):
    (snapshot_dir / "lab.json").write_text("{}")
    response = api_client(personas["platform_engineer"]).patch(
        "/api/v1/clusters/lab/", {"snapshot_paths": ["lab.json"]}, format="json"
    )
    assert response.status_code == 200, response.json()
    assert response.json()["snapshot_paths"] == [str((snapshot_dir / "lab.json").resolve())]


def test_the_edit_page_links_a_cli_made_cluster_and_rescores_it(
    cli_world, personas, nimbus, committed
):
    client = page_client(personas["platform_engineer"])
    form = {"source": "snapshot", "sync_interval_minutes": 60, "snapshot_paths_text": ""}
    with committed():
        response = client.post("/clusters/lab/edit/", {**form, "provider": nimbus.pk})
    assert response.status_code == 302, response.content.decode()[:2000]
    assert Cluster.objects.get(name="lab").provider == nimbus
    assert Finding.objects.filter(check_id="PROV-001", status="open").count() == 1
    # A path typed into the form is still checked, with the reason on the page.
    response = client.post(
        "/clusters/lab/edit/", {**form, "provider": "", "snapshot_paths_text": "/etc/hostname"}
    )
    assert response.status_code == 200 and "must be inside" in response.content.decode()
    assert Cluster.objects.get(name="lab").provider == nimbus


def test_deleting_a_provider_in_the_admin_rescores_the_clusters_it_hosted(
    cli_world, personas, nimbus, committed
):
    with committed():
        api_client(personas["platform_engineer"]).patch(
            "/api/v1/clusters/lab/", {"provider": "nimbus"}, format="json"
        )
    assert Finding.objects.filter(check_id="PROV-001", status="open").exists()
    request = RequestFactory().post("/admin/")
    request.user = personas["security_lead"]
    with committed():
        admin.site._registry[Provider].delete_model(request, nimbus)
    assert not Finding.objects.filter(check_id="PROV-001", status="open").exists()
