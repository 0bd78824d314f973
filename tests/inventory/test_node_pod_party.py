"""The node page names who runs each pod and holds each DRA device: the tenant that claims the
namespace, "platform" only for a platform namespace (the defaults, the labelled, configured and
found ones), "unclassified" for any other (DESIGN §3, fail closed), in a bounded number of
queries whatever the number of such pods."""

from __future__ import annotations

import json
import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from inventory.models import Node
from inventory.services import cluster_sync
from inventory.sources.files import SnapshotFileSource
from inventory.sync import cluster_get_or_create
from tenants.mapping import PLATFORM_LABEL, TENANT_LABEL
from tenants.models import Tenant, TrustClass
from tests.conftest import api_client
from tests.posture.dra_world import claim, device_class, dra_pod, resource_slice
from tests.posture.gpu_access_world import namespace, node, pod

pytestmark = pytest.mark.django_db


def sync(tmp_path, objects: list[dict]) -> Node:
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    cluster = cluster_get_or_create(name="parties")
    assert cluster_sync(cluster=cluster, source=SnapshotFileSource([str(path)])).status == (
        "succeeded"
    )
    return Node.objects.get(cluster=cluster, name="gpu-a")


def world(unclaimed: int = 1) -> list[dict]:
    internal = TrustClass.objects.get(slug="internal")
    Tenant.objects.get_or_create(slug="alpha", defaults={"name": "Alpha", "trust_class": internal})
    spare = [f"mystery-{i}" for i in range(1, unclaimed)]
    return [
        namespace("alpha", **{TENANT_LABEL: "alpha"}),
        namespace("kube-system"),
        namespace("monitoring", **{PLATFORM_LABEL: "true"}),
        namespace("ops-configured"),
        namespace("mystery"),
        *(namespace(ns) for ns in spare),
        node("gpu-a", gpus=4),
        pod("alpha", "train-0"),
        pod("kube-system", "proxy-0"),
        pod("monitoring", "exporter-0"),
        pod("ops-configured", "agent-0"),
        pod("mystery", "miner-0"),
        *(pod(ns, f"{ns}-pod") for ns in spare),
        device_class(),
        resource_slice("gpu-a"),
        claim("mystery", "stolen-gpu", ["gpu-0"], reserved_for=["claimer-0"]),
        dra_pod("mystery", "claimer-0", "stolen-gpu"),
        claim("kube-system", "dcgm", ["gpu-1"], reserved_for=["dcgm-0"]),
        dra_pod("kube-system", "dcgm-0", "dcgm"),
    ]


def party_of(page: str, name: str) -> str:
    """The Tenant cell of the pods table row of pod `name`."""
    row = re.search(rf"<td>{re.escape(name)}</td><td>(.*?)</td>", page)
    assert row, name
    return re.sub(r"<[^>]+>", "", row.group(1))


def test_the_node_page_calls_a_pod_no_tenant_claims_unclassified_unless_platform(
    tmp_path, settings, personas
):
    settings.GPUPOSTURE_PLATFORM_NAMESPACES = ["ops-configured"]
    node_row = sync(tmp_path, world())
    client = Client()
    client.force_login(personas["platform_engineer"])
    page = client.get(f"/nodes/parties/{node_row.name}/").content.decode()
    assert party_of(page, "train-0") == "Alpha"
    assert party_of(page, "proxy-0") == "platform"  # a Kubernetes default
    assert party_of(page, "exporter-0") == "platform"  # labelled gpuposture.io/platform
    assert party_of(page, "agent-0") == "platform"  # GPUPOSTURE_PLATFORM_NAMESPACES
    assert party_of(page, "miner-0") == "unclassified"  # nobody claims it: never the platform
    assert party_of(page, "claimer-0") == "unclassified"
    # The DRA devices: the claim in the unclaimed namespace is unclassified, kube-system's not.
    dra = page[page.index('id="dra-h"') :]
    held = dict(re.findall(r"<td>(\w[\w-]*)/[\w-]+</td><td>(?:<[^>]+>)?(\w+)", dra))
    assert held == {"mystery": "unclassified", "kube-system": "platform"}
    # The node API's DRA devices say it too, beside the claiming tenant (null for both).
    answer = api_client(personas["security_lead"]).get(f"/api/v1/nodes/{node_row.pk}/").json()
    parties = {(d["namespace"], d["tenant"], d["party"]) for d in answer["dra_devices"]}
    assert parties == {("mystery", None, "unclassified"), ("kube-system", None, "platform")}


def test_the_node_page_reads_the_parties_in_the_same_queries_for_one_pod_or_many(
    tmp_path, settings, personas
):
    settings.GPUPOSTURE_PLATFORM_NAMESPACES = ["ops-configured"]
    client = Client()
    client.force_login(personas["platform_engineer"])
    counts = []
    for unclaimed in (1, 12):
        node_row = sync(tmp_path, world(unclaimed))
        with CaptureQueriesContext(connection) as queries:
            page = client.get(f"/nodes/parties/{node_row.name}/").content.decode()
        # Each unclaimed namespace's pod, the claim's pod and its device.
        assert page.count('data-party="unclassified"') == unclaimed + 2
        counts.append(len(queries))
    assert counts[0] == counts[1], counts
