"""A KAI / Run:ai reservation pod is the scheduler's placeholder holding the GPU its fractions
share, as the checks read it (inventory.fractions.is_reservation_pod): the workloads API and
the node page call it `platform`, never `unclassified`, even in KAI's reservation namespace
that no platform list names; `?party=` agrees. A look-alike in any other unclaimed namespace,
or a pod in the reservation namespace without KAI's label or annotation, stays unclassified."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from tests.conftest import api_client
from tests.inventory.test_node_pod_party import party_of, sync, world
from tests.posture.gpu_access_world import kai_fraction_pod, kai_reservation_pod, namespace, pod

pytestmark = pytest.mark.django_db
URL = "/api/v1/workloads/"
GPU = "GPU-0f9e8d7c-0000-0000-0000-000000000001"


def kai_world(reservations: int = 1) -> list[dict]:
    legacy = [
        # Run:ai before KAI v0.6: only the group label ties it to its fractions.
        pod(
            "runai-reservation",
            f"runai-reservation-gpu-gpu-a-{i}",
            labels={"runai-gpu-group": f"legacy-{i}"},
        )
        for i in range(reservations)
    ]
    return [
        *world(),
        namespace("kai-resource-reservation"),
        namespace("runai-reservation"),
        kai_reservation_pod("group-00001", GPU),
        *legacy,
        pod("runai-reservation", "stray-0"),  # neither KAI's label nor annotation
        # A look-alike outside KAI's namespaces is just a pod of a namespace nobody claims.
        pod("mystery", "fake-reservation", annotations={"run.ai/reserve_for_gpu_index": GPU}),
        kai_fraction_pod("alpha", "frac-0", "group-00001"),
    ]


def _parties(client, query: str = "") -> dict[str, str]:
    body = client.get(f"{URL}?page_size=100{query}").json()
    return {w["name"]: w["party"] for w in body["results"]}


def test_the_workloads_api_calls_a_reservation_pod_platform(tmp_path, settings, personas):
    settings.GPUPOSTURE_PLATFORM_NAMESPACES = ["ops-configured"]
    sync(tmp_path, kai_world())
    client = api_client(personas["security_lead"])
    found = _parties(client)
    assert found["gpu-reservation-gpu-a-00001"] == "platform"
    assert found["runai-reservation-gpu-gpu-a-0"] == "platform"
    assert found["stray-0"] == "unclassified"
    assert found["fake-reservation"] == "unclassified"
    assert found["frac-0"] == "alpha"
    pk = next(
        w["id"]
        for w in client.get(f"{URL}?page_size=100").json()["results"]
        if w["name"] == "runai-reservation-gpu-gpu-a-0"
    )
    assert client.get(f"{URL}{pk}/").json()["party"] == "platform"
    unclassified = set(_parties(client, "&party=unclassified"))
    assert unclassified == {"miner-0", "claimer-0", "stray-0", "fake-reservation"}
    platform = set(_parties(client, "&party=platform"))
    assert {"gpu-reservation-gpu-a-00001", "runai-reservation-gpu-gpu-a-0"} <= platform
    assert not platform & unclassified


def test_the_node_page_calls_a_reservation_pod_platform(tmp_path, personas):
    node_row = sync(tmp_path, kai_world())
    client = Client()
    client.force_login(personas["platform_engineer"])
    page = client.get(f"/nodes/parties/{node_row.name}/").content.decode()
    assert party_of(page, "gpu-reservation-gpu-a-00001") == "platform"
    assert party_of(page, "runai-reservation-gpu-gpu-a-0") == "platform"
    assert party_of(page, "stray-0") == "unclassified"
    assert party_of(page, "fake-reservation") == "unclassified"


def test_the_list_and_the_filter_read_reservations_in_the_same_queries_for_one_or_many(
    tmp_path, personas
):
    client = api_client(personas["security_lead"])
    counts = []
    for reservations in (1, 12):
        sync(tmp_path, kai_world(reservations))
        _parties(client)  # warm
        with CaptureQueriesContext(connection) as queries:
            _parties(client)
            _parties(client, "&party=unclassified")
        counts.append(len(queries))
    assert counts[0] == counts[1], counts
