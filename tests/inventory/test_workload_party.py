"""The workloads API names each workload's party as the node page does: its tenant, "platform"
only for a platform namespace, "unclassified" for a namespace nobody claims (DESIGN §3, fail
closed), so automation can tell the two apart where `tenant` is null for both; `?party=`
selects by it; a tenant viewer still sees only their own tenant's workloads."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tenants.models import Tenant
from tests.conftest import api_client
from tests.inventory.test_node_pod_party import sync, world

pytestmark = pytest.mark.django_db
URL = "/api/v1/workloads/"


def _parties(client, query: str = "") -> dict[str, tuple[str | None, str]]:
    body = client.get(f"{URL}?page_size=100{query}").json()
    return {w["name"]: (w["tenant"], w["party"]) for w in body["results"]}


def test_a_workload_nobody_claims_is_unclassified_and_a_platform_ones_platform(
    tmp_path, settings, personas
):
    settings.GPUPOSTURE_PLATFORM_NAMESPACES = ["ops-configured"]
    sync(tmp_path, world())
    client = api_client(personas["security_lead"])
    found = _parties(client)
    assert found["train-0"] == ("alpha", "alpha")
    assert found["proxy-0"] == (None, "platform")  # a Kubernetes default
    assert found["exporter-0"] == (None, "platform")  # labelled gpuposture.io/platform
    assert found["agent-0"] == (None, "platform")  # GPUPOSTURE_PLATFORM_NAMESPACES
    assert found["miner-0"] == (None, "unclassified")  # nobody claims it: never the platform
    assert found["claimer-0"] == (None, "unclassified")
    # One workload says the same.
    pk = next(w["id"] for w in client.get(URL).json()["results"] if w["name"] == "miner-0")
    assert client.get(f"{URL}{pk}/").json()["party"] == "unclassified"
    # ?party= selects by it.
    assert set(_parties(client, "&party=unclassified")) == {"miner-0", "claimer-0"}
    assert set(_parties(client, "&party=platform")) == {
        "proxy-0",
        "dcgm-0",
        "exporter-0",
        "agent-0",
    }
    assert set(_parties(client, "&party=alpha")) == {"train-0"}


def test_a_tenant_viewer_sees_only_their_own_workloads_whatever_the_party(
    tmp_path, settings, personas
):
    sync(tmp_path, world())
    Tenant.objects.get(slug="alpha").viewers.add(personas["viewer_alpha"])
    viewer = api_client(personas["viewer_alpha"])
    assert _parties(viewer) == {"train-0": ("alpha", "alpha")}
    assert _parties(viewer, "&party=unclassified") == {}
    assert _parties(viewer, "&party=platform") == {}
    assert _parties(api_client(personas["viewer_beta"])) == {}


def test_the_list_reads_the_parties_in_the_same_queries_for_one_or_many(
    tmp_path, settings, personas
):
    client = api_client(personas["security_lead"])
    counts = []
    for unclaimed in (1, 12):
        sync(tmp_path, world(unclaimed))
        _parties(client)  # warm: what a process reads once is not the list's cost
        with CaptureQueriesContext(connection) as queries:
            found = _parties(client)
        # Each unclaimed namespace's pod, the claim's pod, and ops-configured's (not listed).
        assert sum(party == "unclassified" for _, party in found.values()) == unclaimed + 2
        counts.append(len(queries))
    assert counts[0] == counts[1], counts


def test_the_schema_documents_party_and_its_filter(personas):
    from django.test import Client

    client = Client()
    client.force_login(personas["auditor"])
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    pod = schema["components"]["schemas"]["Pod"]
    assert "party" in pod["required"] and pod["properties"]["party"]["readOnly"]
    assert '"unclassified"' in pod["properties"]["party"]["description"]
    params = schema["paths"]["/api/v1/workloads/"]["get"]["parameters"]
    assert "party" in {p["name"] for p in params}
