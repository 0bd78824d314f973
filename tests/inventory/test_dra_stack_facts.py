"""A node whose GPUs the NVIDIA DRA driver publishes, without GPU Feature Discovery: its model
and driver version come from its ResourceSlices' GPU devices (productName in GFD's form,
driverVersion), named in gpu_model_basis / driver_version_basis; GFD's labels win where present;
slices that disagree leave the fact unknown and say so; then the bulletins judge the node."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from inventory.bulletins.store import bulletins_import_paths
from inventory.mig_profiles import model_key
from inventory.services import cluster_sync_from_snapshot
from inventory.sync import cluster_get_or_create
from tests.conftest import api_client
from tests.inventory.test_dra_only_nodes import _node, dra_node
from tests.posture.dra_world import device_class, gpu_device, mig_device, resource_slice
from tests.realworld import realworld

SLICE = "dra-1-gpu.nvidia.com-x8k2n"


def _gpus(driver: str = "570.133.20", product: str = "NVIDIA H100 80GB HBM3") -> list[dict]:
    devices = [gpu_device(i, product) for i in range(2)]
    for d in devices:
        d["attributes"]["driverVersion"] = {"version": driver}
    return devices


def test_the_model_comes_from_the_slice_in_gfds_form():
    found = _node(dra_node("dra-1"), device_class(), resource_slice("dra-1", _gpus()))
    assert found.gpu_model == "NVIDIA-H100-80GB-HBM3"
    assert SLICE in found.gpu_model_basis and "productName" in found.gpu_model_basis


def test_the_driver_version_comes_from_the_slice():
    found = _node(dra_node("dra-1"), device_class(), resource_slice("dra-1", _gpus("550.54.15")))
    assert (found.driver_version, found.driver_version_source) == ("550.54.15", "dra-resourceslice")
    assert SLICE in found.driver_version_basis
    assert found.cuda_driver_version == "12.8.0"


def test_domain_qualified_attribute_names_read_the_same():
    devices = _gpus()
    for d in devices:
        d["attributes"] = {f"gpu.nvidia.com/{k}": v for k, v in d["attributes"].items()}
    found = _node(dra_node("dra-1"), device_class(), resource_slice("dra-1", devices))
    assert (found.gpu_model, found.driver_version) == ("NVIDIA-H100-80GB-HBM3", "570.133.20")


def test_gfd_labels_win_over_the_slice():
    gfd = {
        "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB",
        "nvidia.com/cuda.driver-version.full": "535.183.01",
    }
    found = _node(dra_node("dra-1", **gfd), device_class(), resource_slice("dra-1", _gpus()))
    assert (found.gpu_model, found.driver_version) == ("NVIDIA-A100-SXM4-40GB", "535.183.01")
    assert found.driver_version_source == "gfd-label"
    assert (found.gpu_model_basis, found.driver_version_basis) == ("", "")


def _driver_pod(node: str, tag: str) -> dict[str, Any]:
    image = f"nvcr.io/nvidia/driver:{tag}-ubuntu22.04"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "nvidia-driver-daemonset-x1", "namespace": "gpu-operator"},
        "spec": {"nodeName": node, "containers": [{"name": "nvidia-driver-ctr", "image": image}]},
        "status": {"phase": "Running"},
    }


def test_a_driver_pod_of_the_same_version_keeps_nvidias_spelling():
    # The DRA driver publishes semver: NVIDIA's 535.104.05 reads 535.104.5 in the slice.
    objects = [dra_node("dra-1"), device_class(), resource_slice("dra-1", _gpus("535.104.5"))]
    found = _node(*objects, _driver_pod("dra-1", "535.104.05"))
    assert (found.driver_version, found.driver_version_source) == ("535.104.05", "driver-pod")


def test_the_slices_loaded_driver_wins_over_a_driver_pods_other_tag():
    objects = [dra_node("dra-1"), device_class(), resource_slice("dra-1", _gpus("550.54.15"))]
    found = _node(*objects, _driver_pod("dra-1", "535.104.05"))
    assert (found.driver_version, found.driver_version_source) == ("550.54.15", "dra-resourceslice")
    assert "the driver pod's image says 535.104.05" in found.driver_version_basis


def test_mig_only_slices_give_the_parent_gpus_model():
    migs = [mig_device(0, "3g.40gb", "MIG-aaaa"), mig_device(1, "1g.10gb", "MIG-bbbb")]
    migs[0]["attributes"]["driverVersion"] = {"version": "550.54.15"}
    found = _node(dra_node("dra-m"), device_class(), resource_slice("dra-m", migs))
    assert found.gpu_model == "NVIDIA-A100-SXM4-40GB"  # no "-MIG-3g.40gb": the parent's
    assert model_key(found.gpu_model) == "A100-40GB"  # the MIG profile tables know it
    assert found.driver_version == "550.54.15"


def test_slices_that_disagree_leave_model_and_driver_unknown_and_say_so():
    other = {**resource_slice("dra-1", _gpus("550.54.15", "NVIDIA A100-SXM4-40GB"))}
    other["metadata"] = {**other["metadata"], "name": "dra-1-gpu.nvidia.com-zz9"}
    for d in other["spec"]["devices"]:
        d["name"] += "-b"
        d["attributes"]["uuid"] = {"string": d["attributes"]["uuid"]["string"] + "-b"}
    found = _node(dra_node("dra-1"), device_class(), resource_slice("dra-1", _gpus()), other)
    assert found.gpu_model is None and found.driver_version is None
    assert "disagree" in found.gpu_model_basis
    assert "NVIDIA-A100-SXM4-40GB (dra-1-gpu.nvidia.com-zz9)" in found.gpu_model_basis
    assert f"NVIDIA-H100-80GB-HBM3 ({SLICE})" in found.gpu_model_basis
    assert "550.54.15" in found.driver_version_basis and "570.133.20" in found.driver_version_basis


@pytest.mark.parametrize(
    ("published", "written"),
    [("535.104.5", "535.104.05"), ("550.54.15", "550.54.15"), ("570.86.10", "570.86.10")],
)
def test_the_slices_semver_driver_version_is_written_as_nvidia_writes_it(published, written):
    # No driver pod: the slice alone gives it, in NVIDIA's spelling (DESIGN §8), as NVML's.
    objects = [dra_node("dra-1"), device_class(), resource_slice("dra-1", _gpus(published))]
    found = _node(*objects)
    assert (found.driver_version, found.driver_version_source) == (written, "dra-resourceslice")


def test_slices_spelling_one_version_two_ways_agree():
    other = {**resource_slice("dra-1", _gpus("535.104.05"))}
    other["metadata"] = {**other["metadata"], "name": "dra-1-gpu.nvidia.com-zz9"}
    for d in other["spec"]["devices"]:
        d["name"] += "-b"
        d["attributes"]["uuid"] = {"string": d["attributes"]["uuid"]["string"] + "-b"}
    slices = [resource_slice("dra-1", _gpus("535.104.5")), other]
    found = _node(dra_node("dra-1"), device_class(), *slices)
    assert found.driver_version == "535.104.05"


@pytest.mark.parametrize("typed", [{"bool": True}, {"int": 7}])
def test_a_product_name_or_driver_version_not_published_as_text_is_unknown(typed):
    devices = _gpus()
    for d in devices:
        d["attributes"]["productName"] = typed
        d["attributes"]["driverVersion"] = typed
    found = _node(dra_node("dra-1"), device_class(), resource_slice("dra-1", devices))
    assert (found.gpu_model, found.gpu_model_basis) == (None, "")
    assert (found.driver_version, found.driver_version_source) == (None, None)
    # Published as a string, both read as before (the driver version also as `version`).
    for d in devices:
        d["attributes"]["productName"] = {"string": "NVIDIA H100 80GB HBM3"}
        d["attributes"]["driverVersion"] = {"string": "570.133.20"}
    found = _node(dra_node("dra-1"), device_class(), resource_slice("dra-1", devices))
    assert (found.gpu_model, found.driver_version) == ("NVIDIA-H100-80GB-HBM3", "570.133.20")


def test_devices_without_attributes_leave_the_node_unknown_as_before():
    bare = [{"name": f"gpu-{i}", "attributes": {"type": {"string": "gpu"}}} for i in range(2)]
    found = _node(dra_node("dra-1"), device_class(), resource_slice("dra-1", bare))
    assert found.is_gpu_node
    assert (found.gpu_model, found.driver_version, found.driver_version_source) == (None,) * 3
    assert (found.gpu_model_basis, found.driver_version_basis) == ("", "")


# --- the API and the bulletins ------------------------------------------------------------

# The R550 driver bulletins of 2025 (SOURCES.md): 550.144.03 is below 550.163.01, their fix.
DRIVERS = ("5551", "5586", "5614", "5630")


def _sync(tmp_path: Path, drivers: dict[str, str]) -> None:
    items: list[dict[str, Any]] = [device_class()]
    for name, driver in drivers.items():
        items += [dra_node(name), resource_slice(name, _gpus(driver))]
    path = tmp_path / "lab.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    cluster_sync_from_snapshot(
        cluster=cluster_get_or_create(name="lab"), paths=[path], remember=False
    )
    bulletins_import_paths(paths=[str(realworld("csaf", f"nvidia-{n}.json")) for n in DRIVERS])


@pytest.mark.django_db
def test_the_api_shows_the_slices_model_and_driver_and_the_bulletins_judge_it(tmp_path, personas):
    _sync(tmp_path, {"dra-old": "550.144.03", "dra-new": "550.163.01"})
    client = api_client(personas["auditor"])
    nodes = {n["name"]: n for n in client.get("/api/v1/nodes/?cluster=lab").json()["results"]}
    old, new = nodes["dra-old"], nodes["dra-new"]
    assert (old["gpu_model"], old["driver_version"]) == ("NVIDIA-H100-80GB-HBM3", "550.144.03")
    assert "dra-old-gpu.nvidia.com-x8k2n" in old["gpu_model_basis"]
    assert "dra-old-gpu.nvidia.com-x8k2n" in old["driver_version_basis"]
    assert old["components"]["driver"]["version"] == "550.144.03"
    assert old["patch_status"] == "below_baseline"
    exposed = [e for e in old["patch_exposures"] if e["component"] == "driver"]
    assert exposed and any("CVE-2025-23244" in e["cves"] for e in exposed)
    # The fixed version: judged, and current (before: unknown, its driver version unknown).
    assert (new["driver_version"], new["patch_status"]) == ("550.163.01", "current")
    assert new["patch_exposures"] == []
    browser = Client()
    browser.force_login(personas["auditor"])
    page = browser.get("/nodes/lab/dra-old/").content.decode()
    assert '<div class="muted" data-basis="gpu_model">from productName of ResourceSlice' in page
    assert 'data-basis="driver_version">from driverVersion of ResourceSlice dra-old-' in page
