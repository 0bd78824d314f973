"""A bulletin naming the MIG manager or the device plugin, on a cluster read from a snapshot
file that holds no DaemonSets and no pod of the GPU Operator's namespace: whether the node runs
them, nothing read says; never "not affected, component not present"."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command

from demo.bulletins import _advisory, _version, _vulnerability
from inventory.bulletins.store import ImportResult, bulletin_import
from inventory.models import Node
from inventory.services import cluster_sync_from_snapshot
from inventory.sync import cluster_get_or_create
from tests.conftest import api_client
from tests.inventory.test_components import daemonset, ds_pod, node

pytestmark = pytest.mark.django_db

CVE_MIG, CVE_PLUGIN = "CVE-2099-0001", "CVE-2099-0002"


def operand_bulletin() -> dict:
    """MIG manager up to 0.12.1 (fixed in 0.12.2) and device plugin up to 0.17.1 (0.17.2)."""
    products = [
        _version("Linux", "NVIDIA MIG Manager", "All versions up to and including 0.12.1"),
        _version("Linux", "NVIDIA MIG Manager", "0.12.2"),
        _version("Linux", "NVIDIA Device Plugin", "All versions up to and including 0.17.1"),
        _version("Linux", "NVIDIA Device Plugin", "0.17.2"),
    ]
    ids = [p["product"]["product_id"] for p in products]
    arch = {"category": "architecture", "name": "Linux", "branches": products}
    return {
        "document": _advisory("test-9001", "Operands (test)", "2099-01-01T00:00:00Z", "HIGH"),
        "product_tree": {
            "branches": [{"category": "vendor", "name": "NVIDIA", "branches": [arch]}]
        },
        "vulnerabilities": [
            _vulnerability(CVE_MIG, 7.8, "HIGH", [ids[0]], [ids[1]]),
            _vulnerability(CVE_PLUGIN, 7.8, "HIGH", [ids[2]], [ids[3]]),
        ],
    }


def tenant_pod(node_name: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "train-0", "namespace": "team-alpha"},
        "spec": {
            "nodeName": node_name,
            "containers": [
                {
                    "name": "train",
                    "image": "registry.example/train:1",
                    "resources": {"limits": {"nvidia.com/gpu": "1"}},
                }
            ],
        },
        "status": {"phase": "Running"},
    }


def sync(tmp_path: Path, objects: list[dict], name: str = "lab"):
    bulletin_import(data=operand_bulletin(), source="test", result=ImportResult())
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    cluster = cluster_get_or_create(name=name)
    cluster_sync_from_snapshot(cluster=cluster, paths=[path], remember=False)  # judges patches
    return cluster


def vex(name: str, fmt: str) -> dict:
    out = io.StringIO()
    call_command("export_vex", cluster=name, format=fmt, stdout=out)
    return json.loads(out.getvalue())


def statuses(name: str) -> tuple[dict[str, str], dict[str, str]]:
    """(OpenVEX status by CVE, CSAF product status by CVE) of the cluster's node gpu-a."""
    openvex = {s["vulnerability"]["name"]: s["status"] for s in vex(name, "openvex")["statements"]}
    csaf = {v["cve"]: next(iter(v["product_status"])) for v in vex(name, "csaf")["vulnerabilities"]}
    return openvex, csaf


def components(client, name: str) -> dict[str, dict]:
    body = client.get(f"/api/v1/nodes/?cluster={name}").json()
    (gpu,) = body["results"]
    return gpu["components"]


def test_a_tenant_export_says_nothing_of_the_operands(tmp_path, personas):
    """Nodes and a tenant's pods only: no DaemonSet, no pod of the GPU stack anywhere."""
    sync(tmp_path, [node("gpu-a"), tenant_pod("gpu-a")])
    openvex, csaf = statuses("lab")
    assert openvex == {CVE_MIG: "under_investigation", CVE_PLUGIN: "under_investigation"}
    assert csaf == {CVE_MIG: "under_investigation", CVE_PLUGIN: "under_investigation"}
    mig = next(
        s for s in vex("lab", "openvex")["statements"] if s["vulnerability"]["name"] == CVE_MIG
    )
    assert "MIG manager was not read on node gpu-a" in mig["status_notes"]
    gpu = Node.objects.get(name="gpu-a")
    assert gpu.patch_status == "unknown" and gpu.patch_not_affected == []
    found = components(api_client(personas["auditor"]), "lab")
    assert found["mig_manager"]["state"] == "unknown"
    assert found["dcgm_exporter"]["state"] == "unknown"
    assert found["gpu_operator"]["state"] == "unknown"


def test_daemonsets_read_and_no_mig_manager_is_not_affected(tmp_path, personas):
    """The cluster's DaemonSets were read: the device plugin's runs on gpu-a, no MIG manager's
    anywhere. Not present, and a VEX may say so."""
    plugin = "nvcr.io/nvidia/k8s-device-plugin:v0.17.3"
    objects = [
        node("gpu-a"),
        tenant_pod("gpu-a"),
        daemonset("nvidia-device-plugin-daemonset", plugin),
        ds_pod("nvidia-device-plugin-daemonset", "gpu-a", plugin),
    ]
    sync(tmp_path, objects)
    openvex, csaf = statuses("lab")
    assert openvex == {CVE_MIG: "not_affected", CVE_PLUGIN: "fixed"}
    assert csaf == {CVE_MIG: "known_not_affected", CVE_PLUGIN: "fixed"}
    (absent,) = Node.objects.get(name="gpu-a").patch_not_affected
    assert (absent["component"], absent["reason"]["code"]) == (
        "mig_manager",
        "component_not_present",
    )
    found = components(api_client(personas["auditor"]), "lab")
    assert found["mig_manager"]["state"] == "not_installed"


def test_operand_pods_read_without_daemonsets_still_show_absence(tmp_path):
    """No DaemonSets in the file, but the GPU stack's pods are there (the device plugin's on
    gpu-a): the pods of where a MIG manager would run were read, and none is on the node."""
    plugin = "nvcr.io/nvidia/k8s-device-plugin:v0.17.3"
    sync(tmp_path, [node("gpu-a"), ds_pod("nvidia-device-plugin-daemonset", "gpu-a", plugin)])
    openvex, _ = statuses("lab")
    assert openvex[CVE_MIG] == "not_affected"
