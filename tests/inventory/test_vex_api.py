"""The VEX of a cluster through the API, the page and the CLI, on bulletins imported the real
way and nodes whose facts come from a GPU Operator ClusterPolicy."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.utils import timezone

from demo.bulletins import cdi_bulletin, toolkit_bulletin
from inventory.bulletins.store import ImportResult, bulletin_import
from inventory.models import Cluster, ClusterObject, Node, Pod
from tenants.models import Tenant, TrustClass
from tests.conftest import api_client
from tests.inventory.test_vex import check_openvex, csaf_failures

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(personas):
    """Cluster lab with CDI off (ClusterPolicy): gpu-a runs alpha's pod, gpu-b beta's; both
    run toolkit 1.17.4. Cluster empty-lab has no node a bulletin concerns."""
    now = timezone.now()
    lab = Cluster.objects.create(name="lab")
    ClusterObject.objects.create(
        cluster=lab,
        kind="gpu_operator_policy",
        name="cluster-policy",
        data={"spec": {"cdi_enabled": False}},  # as inventory.sources.gpu_operator stores it
    )
    internal = TrustClass.objects.get(slug="internal")
    for slug, node_name in (("alpha", "gpu-a"), ("beta", "gpu-b")):
        tenant = Tenant.objects.create(slug=slug, name=slug.title(), trust_class=internal)
        node = Node.objects.create(
            cluster=lab,
            name=node_name,
            is_gpu_node=True,
            changed_at=now,
            data={"container_toolkit_version": "1.17.4", "not_installed": {}},
        )
        Pod.objects.create(
            cluster=lab,
            namespace=f"team-{slug}",
            name="p",
            node=node,
            tenant=tenant,
            phase="Running",
            changed_at=now,
        )
        tenant.viewers.add(personas[f"viewer_{slug}"])
    Cluster.objects.create(name="empty-lab")
    for bulletin in (toolkit_bulletin, cdi_bulletin):
        bulletin_import(data=bulletin(), source="test", result=ImportResult())
    return lab


def statements_by_node(document: dict) -> dict[str, set[tuple[str, str]]]:
    found: dict[str, set[tuple[str, str]]] = {}
    for s in document["statements"]:
        node = s["products"][0]["@id"].rsplit(":", 1)[-1]
        found.setdefault(node, set()).add((s["vulnerability"]["name"], s["status"]))
    return found


def test_openvex_for_the_cluster(world, personas):
    response = api_client(personas["security_lead"]).get("/api/v1/clusters/lab/vex/")
    assert response.status_code == 200
    assert 'filename="lab-openvex.json"' in response["Content-Disposition"]
    document = json.loads(response.content)
    check_openvex(document)
    assert statements_by_node(document)["gpu-a"] == {
        ("CVE-2025-23266", "not_affected"),  # CDI mode only, and CDI is off
        ("CVE-2025-23267", "not_affected"),
        ("CVE-2025-23359", "fixed"),  # the February bound is <= 1.17.3
        # The bulletins name the device plugin and the GPU Operator too, whose versions the
        # nodes do not state (and which are not known absent): under investigation, not left out.
        ("CVE-2025-23266", "under_investigation"),
        ("CVE-2025-23267", "under_investigation"),
        ("CVE-2025-23359", "under_investigation"),
    }
    spared = next(s for s in document["statements"] if s["status"] == "not_affected")
    assert spared["justification"] == "vulnerable_code_not_in_execute_path"
    assert "spec.cdi.enabled" in spared["status_notes"]


def test_csaf_vex_for_the_cluster_passes_the_verifier(world, personas):
    response = api_client(personas["auditor"]).get("/api/v1/clusters/lab/vex/?format=csaf")
    assert response.status_code == 200
    document = json.loads(response.content)
    assert csaf_failures(document) == []
    assert document["document"]["publisher"]["namespace"] == "http://testserver/"


def test_a_tenant_viewer_gets_the_nodes_their_pods_run_on(world, personas):
    response = api_client(personas["viewer_alpha"]).get("/api/v1/clusters/lab/vex/")
    assert set(statements_by_node(json.loads(response.content))) == {"gpu-a"}


def test_bad_requests_get_a_clear_answer(world, personas):
    lead = api_client(personas["security_lead"])
    bad = lead.get("/api/v1/clusters/lab/vex/?format=spdx")
    assert bad.status_code == 400 and "openvex or csaf" in bad.json()["detail"]
    empty = lead.get("/api/v1/clusters/empty-lab/vex/")
    assert empty.status_code == 404 and "import the vendor's CSAF" in empty.json()["detail"]
    # A cluster the viewer's tenants do not run on does not exist for them.
    assert (
        api_client(personas["viewer_alpha"]).get("/api/v1/clusters/empty-lab/vex/").status_code
        == 404
    )


def test_the_page_lists_statements_and_offers_both_downloads(world, personas):
    client = Client()
    client.force_login(personas["platform_engineer"])
    page = client.get("/clusters/lab/vex/").content.decode()
    assert page.count('data-vex-status="not_affected"') == 4  # 2 CVEs x 2 nodes
    assert "vulnerable_code_not_in_execute_path" in page
    assert "/api/v1/clusters/lab/vex/?format=csaf" in page
    assert "/clusters/lab/vex/" in client.get("/clusters/lab/").content.decode()
    assert "data-vex-empty" in client.get("/clusters/empty-lab/vex/").content.decode()


def test_cli_writes_either_format(world):
    out, err = io.StringIO(), io.StringIO()
    call_command("export_vex", "--cluster", "lab", "--format", "csaf", stdout=out, stderr=err)
    assert csaf_failures(json.loads(out.getvalue())) == []
    # 10: the device plugin and GPU Operator, not read on either node (test_vex_unread.py).
    assert err.getvalue().startswith(
        "16 statements for cluster lab: 0 affected, 2 fixed, 4 not affected, 10 under investigation"
    )
    out = io.StringIO()
    call_command("export_vex", "--cluster", "lab", stdout=out, stderr=io.StringIO())
    check_openvex(json.loads(out.getvalue()))
    with pytest.raises(CommandError, match="no cluster named 'nope'"):
        call_command("export_vex", "--cluster", "nope")
    with pytest.raises(CommandError, match="No VEX statement for cluster empty-lab"):
        call_command("export_vex", "--cluster", "empty-lab")


def test_query_count_does_not_grow_with_nodes(world, personas):
    """Pinned (STYLE rule 9): roles, the cluster, its GPU nodes, the bulletin fixes (bulletin
    joined), the ClusterPolicies and sharing configs: the same at 2 and at 22 nodes."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def queries() -> int:
        client = api_client(type(personas["auditor"]).objects.get(username="aud"))
        with CaptureQueriesContext(connection) as ctx:
            assert client.get("/api/v1/clusters/lab/vex/?format=csaf").status_code == 200
        return len(ctx.captured_queries)

    small = queries()
    now = timezone.now()
    for i in range(20):
        Node.objects.create(
            cluster=world,
            name=f"gpu-x{i}",
            is_gpu_node=True,
            changed_at=now,
            data={"container_toolkit_version": "1.17.8", "not_installed": {}},
        )
    assert queries() == small <= 5
