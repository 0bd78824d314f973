"""The workloads API says which workload each pod belongs to (`workload_kind`,
`workload_namespace`, `workload_name`), resolved as findings resolve their subject
(inventory.owners.workload_of), so a client goes from a finding's subject to its pods; in the
same few queries for one page of pods or many, pods owned by pods included."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from inventory.models import Pod
from inventory.services import cluster_sync
from inventory.sources.files import SnapshotFileSource
from inventory.sync import cluster_get_or_create
from tests.conftest import api_client
from tests.inventory import owner_chain_world as world

pytestmark = pytest.mark.django_db
URL = "/api/v1/workloads/"


def sync(tmp_path, objects: list[dict]) -> None:
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    cluster = cluster_get_or_create(name="chains")
    assert cluster_sync(cluster=cluster, source=SnapshotFileSource([str(path)])).status == (
        "succeeded"
    )


def workloads(client) -> dict[str, tuple[str, str, str]]:
    body = client.get(f"{URL}?page_size=100").json()
    return {
        w["name"]: (w["workload_kind"], w["workload_namespace"], w["workload_name"])
        for w in body["results"]
    }


def test_each_pod_names_its_workload_as_its_findings_do(tmp_path, personas):
    sync(
        tmp_path, [*world.spark(), *world.kserve(), *world.leaderworkerset(), *world.gpu_operator()]
    )
    client = api_client(personas["security_lead"])
    found = workloads(client)
    spark = ("SparkApplication", world.NS, "acme-etl")
    assert found["acme-etl-driver"] == found["acme-etl-exec-1"] == spark
    assert found[f"{world.KSERVE_RS[2]}-a"] == ("InferenceService", world.NS, "fraud-model")
    assert found["vllm-0-1"] == found["vllm-0"] == ("LeaderWorkerSet", world.NS, "vllm")
    plugin = "nvidia-device-plugin-daemonset-x2"
    assert found[plugin] == ("ClusterPolicy", "", "cluster-policy")
    # One pod says the same.
    pk = Pod.objects.get(name="acme-etl-exec-2").pk
    one = client.get(f"{URL}{pk}/").json()
    assert (one["workload_kind"], one["workload_name"]) == ("SparkApplication", "acme-etl")


def test_the_list_reads_the_workloads_in_the_same_queries_for_one_or_many(tmp_path, personas):
    client = api_client(personas["security_lead"])
    counts = []
    for apps in (1, 6):
        spark = [world.renamed(world.spark(), "acme-etl", f"etl{i}") for i in range(apps)]
        objects = [o for app in spark for o in app]
        sync(tmp_path, [*objects, *world.leaderworkerset()])
        workloads(client)  # warm: what a process reads once is not the list's cost
        with CaptureQueriesContext(connection) as queries:
            found = workloads(client)
        assert found[f"etl{apps - 1}-exec-1"] == ("SparkApplication", world.NS, f"etl{apps - 1}")
        counts.append(len(queries))
    assert counts[0] == counts[1], counts


def test_the_schema_documents_the_workload_fields(personas):
    from django.test import Client

    client = Client()
    client.force_login(personas["auditor"])
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    pod = schema["components"]["schemas"]["Pod"]["properties"]
    assert pod["workload_kind"]["type"] == "string"
    assert "subject_kind" in pod["workload_kind"]["description"]
