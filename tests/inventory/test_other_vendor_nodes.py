"""AMD, Intel and Gaudi nodes on the pages and the node API: their vendor, resources and counts,
and "not inventoried" where NVIDIA's facts would be; never CPU-only, never "none (whole GPUs)",
never counted as no-GPU nodes. The mixed cluster of tests/posture/test_mixed_vendor_accelerators
(an H100 node, an MI300 node, a Gaudi node, an Intel Flex node, a CPU node), synced."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client

from inventory.models import Node
from inventory.patching.no_gpu import no_gpu_patch
from inventory.snapshot.accelerators import accelerator_vendors, not_inventoried
from tests.conftest import api_client
from tests.posture.test_mixed_vendor_accelerators import objects

OTHER = {"mi300-a", "gaudi-a", "flex-a"}


@pytest.fixture
def mixed(db, tmp_path):
    from inventory.services import cluster_sync_from_snapshot
    from inventory.sync import cluster_get_or_create

    path = tmp_path / "mixed.json"
    path.write_text(json.dumps({"kind": "List", "items": objects()}))
    cluster_sync_from_snapshot(cluster=cluster_get_or_create(name="mixed"), paths=[str(path)])


def page(user, url: str) -> str:
    client = Client()
    client.force_login(user)
    response = client.get(url)
    assert response.status_code == 200, url
    return response.content.decode()


def row_of(text: str, node: str) -> str:
    """The node list's table row of `node`."""
    found = re.search(
        rf'<tr>\s*<td>mixed</td>\s*<td[^>]*><a href="[^"]*">{node}</a>.*?</tr>', text, re.S
    )
    assert found, node
    return found.group(0)


def test_vendors_and_the_reason_are_pure_facts_of_the_resources():
    assert accelerator_vendors({"habana.ai/gaudi": 8, "amd.com/gpu": 2}) == ["AMD", "Intel Gaudi"]
    assert accelerator_vendors({"gpu.intel.com/xe": 2, "gpu.intel.com/i915": 1}) == ["Intel"]
    assert not_inventoried({}) is None
    assert not_inventoried({"amd.com/gpu": 8}).startswith("not inventoried: the AMD stack")
    # The patch note names what it holds, not "no GPU capacity".
    data = {
        "gpu_signs": ["its capacity lists amd.com/gpu=8"],
        "accelerator_resources": {"amd.com/gpu": 8},
    }
    status, _e, notes, _n, _u = no_gpu_patch(data)
    assert status == "unknown" and notes[0].startswith("holds AMD accelerators (amd.com/gpu: 8)")
    assert "no AMD bulletin is judged" in notes[0]


@pytest.mark.django_db
def test_the_node_api_names_vendor_and_why_nothing_else_is_known(mixed, personas):
    lead = api_client(personas["security_lead"])
    nodes = {n["name"]: n for n in lead.get("/api/v1/nodes/?cluster=mixed").json()["results"]}
    amd, gaudi, flex = nodes["mi300-a"], nodes["gaudi-a"], nodes["flex-a"]
    assert (amd["accelerator_vendors"], amd["accelerator_resources"]) == (
        ["AMD"],
        {"amd.com/gpu": 8},
    )
    assert gaudi["accelerator_vendors"] == ["Intel Gaudi"] and flex["accelerator_vendors"] == [
        "Intel"
    ]
    for node in (amd, gaudi, flex):
        assert node["not_inventoried"].startswith("not inventoried: the ")
        # NVIDIA's facts: null, with the reason; never "none (whole GPUs)" or "current".
        assert node["sharing_strategy"] is None
        assert node["sharing_basis"] == node["not_inventoried"]
        assert node["patch_status"] == "unknown"
        assert node["patch_notes"][0].startswith("holds "), node["patch_notes"]
        assert (node["gpu_model"], node["gpu_count"], node["driver_version"]) == (None, None, None)
    assert (
        nodes["h100-a"]["not_inventoried"] is None and nodes["h100-a"]["sharing_strategy"] == "none"
    )
    cpu = nodes["cpu-a"]
    assert (cpu["accelerator_vendors"], cpu["not_inventoried"], cpu["patch_status"]) == (
        [],
        None,
        None,
    )


@pytest.mark.django_db
@pytest.mark.parametrize(
    "kind, expected",
    [
        ("true", {"h100-a", *OTHER}),
        ("yes", {"h100-a", *OTHER}),
        ("nvidia", {"h100-a"}),
        ("false", {"cpu-a"}),
        ("unknown", {"h100-a", "cpu-a", *OTHER}),
    ],
)
def test_gpu_filter_counts_every_vendors_gpu_nodes(mixed, personas, kind, expected):
    """`?gpu=true` is a node of GPUs of any vendor (an AMD node was listed under `false`, as
    CPU-only); `?gpu=nvidia` the NVIDIA ones whose stack is inventoried. Page and API alike."""
    lead = api_client(personas["security_lead"])
    rows = lead.get(f"/api/v1/nodes/?cluster=mixed&gpu={kind}").json()["results"]
    assert {r["name"] for r in rows} == expected
    text = page(personas["platform_engineer"], f"/nodes/?cluster=mixed&gpu={kind}")
    assert {n for n in ("h100-a", "cpu-a", *OTHER) if f">{n}</a>" in text} == expected


@pytest.mark.django_db
def test_the_nodes_page_shows_vendor_resources_and_not_inventoried(mixed, personas):
    text = page(personas["platform_engineer"], "/nodes/?cluster=mixed")
    amd = row_of(text, "mi300-a")
    assert "<span data-vendor>AMD</span>" in amd and "amd.com/gpu: 8" in amd
    assert "not inventoried: AMD stack not read" in amd
    # Not a CPU-only row: no "0" GPUs, no "—" for its model and sharing.
    assert '<td class="num">0</td>' not in amd and ">—<" not in amd.split("data-not-inventoried")[0]
    assert "not read</span>" in amd  # sharing
    assert "not inventoried: Intel Gaudi stack not read" in row_of(text, "gaudi-a")
    cpu = row_of(text, "cpu-a")
    assert '<td class="num">0</td>' in cpu and "not inventoried" not in cpu


@pytest.mark.django_db
def test_the_node_page_of_an_amd_node_is_no_cpu_node(mixed, personas):
    text = page(personas["platform_engineer"], "/nodes/mixed/mi300-a/")
    assert "data-cpu-node" not in text and "A CPU node" not in text
    assert "data-other-vendor" in text and 'data-accelerator="amd.com/gpu">amd.com/gpu: 8' in text
    assert "not inventoried: the AMD stack is not read" in text
    assert 'Patch status: <span class="status">unknown</span>' in text
    assert "Why unknown: holds AMD accelerators" in text
    assert "data-cpu-node" in page(personas["platform_engineer"], "/nodes/mixed/cpu-a/")


@pytest.mark.django_db
def test_cluster_page_and_home_count_other_vendors_gpu_nodes(mixed, personas):
    text = page(personas["platform_engineer"], "/clusters/mixed/")
    assert "4 GPU nodes of 5</a>" in text
    assert "(1 NVIDIA; 3 of other vendors: " in text and "vendor stack not read" in text
    home = page(personas["platform_engineer"], "/home/")
    assert "3 of other vendors' GPUs: not inventoried, vendor stack not read" in home
    assert Node.objects.filter(is_accelerator_node=True, is_gpu_node=False).count() == 3


@pytest.mark.django_db
def test_the_patch_page_counts_other_vendors_nodes_it_cannot_judge(mixed, personas):
    """The patch page rows NVIDIA's nodes (their bulletins); the AMD, Intel and Gaudi nodes
    were absent without a word. Counted now, not rowed, and never "no GPU nodes yet"."""
    text = page(personas["platform_engineer"], "/patch/")
    assert "3 node(s) of other vendors&#x27; GPUs are not judged here" in text or (
        "3 node(s) of other vendors' GPUs are not judged here" in text
    )
    assert "mi300-a" not in text and "No GPU nodes yet" not in text


@pytest.mark.django_db
def test_the_node_api_says_which_sharing_is_judged_and_which_not(mixed, personas):
    lead = api_client(personas["security_lead"])
    nodes = {n["name"]: n for n in lead.get("/api/v1/nodes/?cluster=mixed").json()["results"]}
    amd, gaudi = nodes["mi300-a"]["not_inventoried"], nodes["gaudi-a"]["not_inventoried"]
    # SHARE-001/003/007 and LEAK-002 judge AMD's and Intel's sharing from labels and capacity.
    assert "telemetry" in amd and "sharing of amd.com/gpu between tenants is judged" in amd
    assert "sharing, so" not in amd and "not judged" not in amd
    assert "the sharing of habana.ai/gaudi is not judged" in gaudi
