"""A vm-vgpu node's physical GPU count (issue: null, shown as nothing or 0 in places): where no
input states it, every page that shows it says "unknown" and the node's page says why; an
nvidia-smi import, which lists the host's physical GPUs, states it and says so. Never the vGPU
capacity taken for GPUs."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
from django.test import Client

from inventory.hostfacts_import import node_host_facts_import
from inventory.models import Node
from inventory.services import cluster_sync_from_snapshot
from inventory.sync import cluster_get_or_create
from sharing.services import sharing_request_create
from tenants.models import Tenant, TrustClass
from tests.conftest import DATA, api_client

pytestmark = pytest.mark.django_db

VGPU = "nvidia.com/NVIDIA_A10-12Q"
VGPU_NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {
        "name": "vgpu-1",
        "labels": {
            "nvidia.com/gpu.present": "true",
            "nvidia.com/gpu.workload.config": "vm-vgpu",
            "nvidia.com/vgpu.config": "A10-12Q",
            "nvidia.com/vgpu.config.state": "success",
        },
    },
    "spec": {},
    "status": {"capacity": {"cpu": "64", VGPU: "4"}, "allocatable": {"cpu": "63", VGPU: "4"}},
}


def _sync(tmp_path: Path):
    path = tmp_path / "vgpu.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [VGPU_NODE]}))
    cluster = cluster_get_or_create(name="vlab")
    cluster_sync_from_snapshot(cluster=cluster, paths=[path], remember=False)
    return cluster


def _cell(page: str, marker: str) -> str:
    """The text of the table cell carrying `marker`."""
    found = re.search(rf"<td {marker}>(.*?)</td>", page, re.S)
    assert found, marker
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", found.group(1)))).strip()


def test_an_unknown_vgpu_host_count_says_unknown_and_why(tmp_path, personas):
    cluster = _sync(tmp_path)
    node = Node.objects.get(name="vgpu-1")
    assert node.is_gpu_node and node.gpu_count is None
    client = Client()
    client.force_login(personas["security_lead"])
    detail = _cell(client.get("/nodes/vlab/vgpu-1/").content.decode(), "data-gpu-count")
    assert detail.startswith("unknown why: the capacity nvidia.com/NVIDIA_A10-12Q=4 counts vGPUs")
    # A sharing request's decision page lists the node's GPUs: unknown, not left out.
    internal = TrustClass.objects.get(slug="internal")
    alpha = Tenant.objects.create(slug="alpha", name="Alpha", trust_class=internal)
    item = sharing_request_create(
        tenant=alpha,
        cluster=cluster,
        mode="vgpu_fixed",
        node_pool="",
        justification="VMs",
        user=personas["platform_engineer"],
    )
    client.force_login(personas["platform_engineer"])
    page = client.get(f"/sharing-requests/{item.pk}/").content.decode()
    row = page[page.index('href="/nodes/vlab/vgpu-1/"') :]
    row = html.unescape(re.sub(r"<[^>]+>", " ", row[: row.index("</tr>")]))
    assert "unknown × unknown model" in re.sub(r"\s+", " ", row)


def test_nvidia_smi_states_a_vgpu_hosts_count_and_says_so(tmp_path, personas):
    cluster = _sync(tmp_path)
    xml = (DATA / "nvidia-smi" / "h100-mig.xml").read_bytes()  # the host's 2 physical GPUs
    node_host_facts_import(cluster=cluster, node_name="vgpu-1", xml=xml)
    node = Node.objects.get(name="vgpu-1")
    assert node.gpu_count == 2
    client = Client()
    client.force_login(personas["security_lead"])
    detail = _cell(client.get("/nodes/vlab/vgpu-1/").content.decode(), "data-gpu-count")
    assert detail == "2 from nvidia-smi on the host (2 GPUs listed)"
    basis = api_client(personas["auditor"]).get(f"/api/v1/nodes/{node.pk}/").json()
    assert basis["gpu_count_basis"] == "nvidia-smi on the host (2 GPUs listed)"
