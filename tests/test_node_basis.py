"""The node page and API say why a node's sharing mode and GPU count read as they do, where
the sync recorded it (a DRA claim, HAMi, a passthrough node's capacity), and nothing where
the labels decide; a tenant viewer never reads another tenant's claim in it. Where a
precompiled driver runs, the page names the branch the ClusterPolicy gives, never a version."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from django.test import Client

from inventory.bulletins.store import bulletins_import_paths
from inventory.models import Node
from inventory.services import cluster_sync_from_snapshot
from inventory.sync import cluster_get_or_create
from tests.conftest import api_client, world_snapshot_path
from tests.inventory.test_components import daemonset, ds_pod, operator_cluster
from tests.posture.dra_world import claim, device_class, dra_pod, resource_slice
from tests.posture.gpu_access_world import UUIDS, node
from tests.realworld import realworld

pytestmark = pytest.mark.django_db

# HAMi's device plugin registers each GPU: "<uuid>,<split count>,<memory>,<cores>,...:".
HAMI_REGISTER = "".join(f"{uuid},10,32768,100,NVIDIA-H100,0,true:" for uuid in UUIDS[:2])


def _basis_objects() -> list[dict]:
    """Beside the small world's gpu-ts-1 (time-sliced by its device-plugin config, no basis):
    gpu-dra, which GFD calls unshared while team-alpha's and beta-prod's TimeSlicing claims
    share gpu-0; vm-pt, a passthrough node GFD does not count."""
    dra = node("gpu-dra", gpus=2, labels={"nvidia.com/gpu.sharing-strategy": "none"})
    passthrough = node(
        "vm-pt",
        capacity={"nvidia.com/GA100_A100_PCIE_40GB": "4"},
        labels={"nvidia.com/gpu.workload.config": "vm-passthrough"},
    )
    del passthrough["metadata"]["labels"]["nvidia.com/gpu.count"]
    shared = {"sharing": "TimeSlicing", "node": "gpu-dra"}
    return [
        dra,
        passthrough,
        resource_slice("gpu-dra"),
        device_class(),
        claim("team-alpha", "trainer-gpu", ["gpu-0"], reserved_for=["dra-trainer"], **shared),
        claim("beta-prod", "secret-infer-gpu", ["gpu-0"], reserved_for=["secret-infer"], **shared),
        dra_pod("team-alpha", "dra-trainer", "trainer-gpu", node_name="gpu-dra"),
        dra_pod("beta-prod", "secret-infer", "secret-infer-gpu", node_name="gpu-dra"),
    ]


@pytest.fixture
def basis_lab(small_world, tmp_path):
    path = tmp_path / "basis.json"
    path.write_text(json.dumps({"kind": "List", "apiVersion": "v1", "items": _basis_objects()}))
    cluster_sync_from_snapshot(cluster=small_world, paths=[world_snapshot_path(), path])
    # gpu-hami, in a cluster of its own: HAMi's device plugin registered its GPUs.
    hami = node("gpu-hami", gpus=2, capacity={"nvidia.com/gpu": "2"})
    hami["metadata"]["annotations"] = {"hami.io/node-nvidia-register": HAMI_REGISTER}
    path = tmp_path / "hami.json"
    path.write_text(json.dumps({"kind": "List", "apiVersion": "v1", "items": [hami]}))
    cluster_sync_from_snapshot(cluster=cluster_get_or_create(name="hami-lab"), paths=[path])
    return small_world


def _nodes(user) -> dict[str, dict]:
    body = api_client(user).get("/api/v1/nodes/").json()
    return {n["name"]: n for n in body["results"]}


def test_the_node_api_says_where_sharing_and_count_come_from(basis_lab, personas):
    nodes = _nodes(personas["security_lead"])
    dra = nodes["gpu-dra"]
    assert dra["sharing_strategy"] == "time_slicing"
    assert dra["sharing_basis"].startswith("DRA: ResourceClaim beta-prod/secret-infer-gpu holds")
    assert "gpu-0 by time_slicing" in dra["sharing_basis"]
    assert "1 more claim(s)" in dra["sharing_basis"]
    hami = nodes["gpu-hami"]
    assert hami["sharing_strategy"] == "time_slicing"
    assert "HAMi" in hami["sharing_basis"] and "10 shares per GPU" in hami["sharing_basis"]
    passthrough = nodes["vm-pt"]
    assert passthrough["gpu_count"] == 4
    assert passthrough["gpu_count_basis"] == (
        "capacity nvidia.com/GA100_A100_PCIE_40GB=4: "
        "the sandbox device plugin advertises each passthrough GPU once"
    )
    # Where GFD's labels and the device-plugin config decide, no basis: null, never "".
    labelled = nodes["gpu-ts-1"]
    assert labelled["sharing_strategy"] == "time_slicing"
    assert labelled["sharing_basis"] is None and labelled["gpu_count_basis"] is None
    assert dra["gpu_count_basis"] is None and passthrough["sharing_basis"] is None
    assert nodes["cpu-1"]["sharing_basis"] is None and nodes["cpu-1"]["gpu_count_basis"] is None
    # The one-node answer says the same.
    one = api_client(personas["auditor"]).get(f"/api/v1/nodes/{dra['id']}/").json()
    assert one["sharing_basis"] == dra["sharing_basis"]


def test_a_tenant_viewer_reads_the_basis_without_the_other_tenants_claim(basis_lab, personas):
    node = Node.objects.get(name="gpu-dra")
    body = api_client(personas["viewer_alpha"]).get(f"/api/v1/nodes/{node.pk}/").json()
    basis = body["sharing_basis"]
    assert basis.startswith("DRA: ResourceClaim (another tenant's object) holds gpu-0")
    assert "beta-prod" not in basis and "secret-infer" not in basis
    browser = Client()
    browser.force_login(personas["viewer_alpha"])
    page = browser.get(f"/nodes/lab/{node.name}/").content.decode()
    assert "why: DRA: ResourceClaim (another tenant&#x27;s object) holds gpu-0" in page
    assert "beta-prod" not in page and "secret-infer" not in page


def test_the_node_page_shows_the_basis_and_nothing_where_none_is_recorded(basis_lab, personas):
    browser = Client()
    browser.force_login(personas["platform_engineer"])

    def page(name: str) -> str:
        response = browser.get(f"/nodes/lab/{name}/")
        assert response.status_code == 200
        return response.content.decode()

    dra = page("gpu-dra")
    assert 'data-basis="sharing"' in dra
    assert "why: DRA: ResourceClaim beta-prod/secret-infer-gpu holds gpu-0 by time_slicing" in dra
    hami = browser.get("/nodes/hami-lab/gpu-hami/").content.decode()
    assert "why: HAMi shares the GPUs under soft memory and core limits" in hami
    passthrough = page("vm-pt")
    assert (
        '<div class="muted" data-basis="gpu_count">from capacity '
        "nvidia.com/GA100_A100_PCIE_40GB=4: the sandbox device plugin advertises each "
        "passthrough GPU once</div>"
    ) in passthrough
    assert 'data-basis="sharing"' not in passthrough
    labelled = page("gpu-ts-1")
    assert "data-basis" not in labelled and "why:" not in labelled
    # The nodes list still filters and shows them (its columns are unchanged).
    listed = browser.get("/nodes/?sharing_strategy=time_slicing").content.decode()
    assert all(name in listed for name in ("gpu-dra", "gpu-hami", "gpu-ts-1"))
    assert "vm-pt" not in listed


PRECOMPILED = "nvcr.io/nvidia/driver:535-5.15.0-1048-aws-ubuntu22.04"


def _precompiled_cluster(driver: dict) -> list[dict]:
    """operator_cluster's gpu-a with no driver version label, running the Operator's
    precompiled driver pod, and a ClusterPolicy with these `driver` settings."""
    objects = copy.deepcopy(operator_cluster())
    for obj in objects:
        if obj["kind"] == "Node":
            del obj["metadata"]["labels"]["nvidia.com/cuda.driver-version.full"]
    objects += [
        daemonset("nvidia-driver-daemonset", PRECOMPILED, "driver"),
        ds_pod("nvidia-driver-daemonset", "gpu-a", PRECOMPILED),
        {
            "apiVersion": "nvidia.com/v1",
            "kind": "ClusterPolicy",
            "metadata": {"name": "cluster-policy"},
            "spec": {"driver": driver},
        },
    ]
    return objects


def _sync(tmp_path: Path, objects: list[dict]) -> None:
    path = tmp_path / "precompiled.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    cluster = cluster_get_or_create(name="pc")
    cluster_sync_from_snapshot(cluster=cluster, paths=[path], remember=False)


def _driver_cell(page: str) -> str:
    start = page.index('data-component="driver"')
    return page[start : page.index("</tr>", start)]


def test_a_precompiled_driver_shows_its_branch_never_as_a_version(tmp_path, personas):
    driver = {"enabled": True, "usePrecompiled": True, "version": "535"}
    _sync(tmp_path, _precompiled_cluster({**driver, "useNvidiaDriverCRD": False}))
    # A R535 bulletin: the branch alone must not judge the node current or below it.
    bulletins_import_paths(paths=[str(realworld("csaf", "nvidia-5670.json"))])
    node = Node.objects.get(name="gpu-a")
    assert node.driver_version == "" and node.patch_status == "unknown"
    assert node.data["upgrade_by"]["driver"] == "GPU Operator"
    body = api_client(personas["auditor"]).get(f"/api/v1/nodes/{node.pk}/").json()
    assert body["driver_version"] is None
    assert body["components"]["driver"]["state"] == "unknown"
    browser = Client()
    browser.force_login(personas["auditor"])
    cell = _driver_cell(browser.get("/nodes/pc/gpu-a/").content.decode())
    assert "precompiled branch 535, exact version unknown" in cell
    assert 'data-driver-branch="535"' in cell
    # gpu-b runs no driver pod the sync saw as the Operator's: it says unknown only.
    other = _driver_cell(browser.get("/nodes/pc/gpu-b/").content.decode())
    assert "precompiled" not in other and ">unknown<" in other


@pytest.mark.parametrize(
    "driver",
    [
        # NVIDIADriver objects set the driver: the ClusterPolicy's branch is not used.
        {"enabled": True, "usePrecompiled": True, "version": "535", "useNvidiaDriverCRD": True},
        # Not precompiled: driver.version would be a version, read from the node elsewhere.
        {"enabled": True, "version": "535", "useNvidiaDriverCRD": False},
    ],
)
def test_no_branch_is_named_where_the_clusterpolicy_does_not_give_one(tmp_path, personas, driver):
    _sync(tmp_path, _precompiled_cluster(driver))
    browser = Client()
    browser.force_login(personas["auditor"])
    cell = _driver_cell(browser.get("/nodes/pc/gpu-a/").content.decode())
    assert "precompiled" not in cell and ">unknown<" in cell
