"""Patch truth end to end (issue 17 items 7-9): a cluster synced from `kubectl get -o json`
objects, real NVIDIA bulletins imported. A component the node does not run is "not installed"
(not unknown), firmware is coverage, a bulletin's condition is judged against the node."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from django.test import Client

from inventory.bulletins.store import bulletins_import_paths
from inventory.hostfacts_import import node_host_facts_import
from inventory.models import Node
from inventory.services import cluster_sync_from_snapshot
from inventory.sync import cluster_get_or_create
from posture.models import Finding
from posture.services import posture_evaluate
from tests.conftest import DATA, api_client
from tests.inventory.test_components import operator_cluster
from tests.realworld import realworld

pytestmark = pytest.mark.django_db


def sync(tmp_path: Path, objects: list[dict], name: str = "lab"):
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    cluster = cluster_get_or_create(name=name)
    cluster_sync_from_snapshot(cluster=cluster, paths=[path], remember=False)
    return cluster


def import_real(*numbers: str) -> None:
    bulletins_import_paths(paths=[str(realworld("csaf", f"nvidia-{n}.json")) for n in numbers])


def patch(name: str) -> Node:
    return Node.objects.get(name=name)


def test_a_node_without_a_dcgm_exporter_reads_current(tmp_path, personas):
    """gpu-a: the admin switched the exporter off (the operator's per-node label). Before, the
    DCGM Exporter bulletin made it `unknown` for ever; a fully patched cluster never read
    `current`. gpu-b runs exporter 4.1.3 (affected); gpu-c should run one but its pod is gone."""
    sync(tmp_path, operator_cluster())
    import_real("5670", "5857")  # R570 driver fixed in 570.172.08; DCGM Exporter up to 4.8.2
    assert patch("gpu-a").patch_status == "current"
    assert patch("gpu-a").patch_notes == []
    assert patch("gpu-b").patch_status == "below_baseline"
    assert patch("gpu-c").patch_status == "unknown"
    assert patch("gpu-c").patch_notes == ["DCGM exporter: version unknown"]
    (absent,) = patch("gpu-a").patch_not_affected
    assert (absent["component"], absent["advisory_id"]) == ("dcgm_exporter", "5857")
    assert absent["reason"]["code"] == "component_not_present"
    posture_evaluate()
    stack004 = Finding.objects.filter(check_id="STACK-004", status="open")
    assert {f.subject_name: f.evidence["unknown"] for f in stack004} == {
        "gpu-c": ["dcgm_exporter_version"]
    }


def test_the_api_says_not_installed_and_unknown_is_null(tmp_path, personas):
    sync(tmp_path, operator_cluster())
    import_real("5857")
    body = api_client(personas["auditor"]).get("/api/v1/nodes/?cluster=lab").json()
    nodes = {n["name"]: n for n in body["results"]}
    gpu_a = nodes["gpu-a"]
    assert gpu_a["components"]["dcgm_exporter"]["state"] == "not_installed"
    assert gpu_a["components"]["dcgm_exporter"]["version"] is None
    assert gpu_a["components"]["container_toolkit"] == {
        "state": "installed",
        "version": "1.17.8",
        "source": "pod gpu-operator/nvidia-container-toolkit-daemonset-a7k2p",
    }
    # Unknown and not installed are null, never "".
    assert gpu_a["firmware_version"] is None and gpu_a["mig_config"] is None
    assert gpu_a["components"]["firmware"]["state"] == "unknown"
    assert gpu_a["patch_not_affected"][0]["reason"]["code"] == "component_not_present"
    assert nodes["gpu-c"]["components"]["dcgm_exporter"]["state"] == "unknown"
    page = login(personas["auditor"]).get("/nodes/lab/gpu-a/").content.decode()
    assert 'data-component="dcgm_exporter" data-state="not_installed"' in page
    assert "not installed" in page and "Not affected, and why" in page


def login(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_firmware_is_coverage_on_the_cluster_page_api_and_checklist(tmp_path, personas):
    cluster = sync(tmp_path, operator_cluster())
    posture_evaluate()
    auditor = api_client(personas["auditor"])
    coverage = auditor.get("/api/v1/clusters/lab/").json()["inventory_coverage"]
    assert (coverage["gpu_nodes"], coverage["firmware_known"], coverage["firmware_percent"]) == (
        3,
        0,
        0.0,
    )
    # No bulletin names firmware: the missing VBIOS is no STACK-004 finding anywhere.
    assert not Finding.objects.filter(check_id="STACK-004", subject_name="gpu-a").exists()
    node_host_facts_import(
        cluster=cluster, node_name="gpu-a", xml=(DATA / "nvidia-smi" / "h100-mig.xml").read_bytes()
    )
    listed = auditor.get("/api/v1/clusters/").json()["results"]
    assert listed[0]["inventory_coverage"]["firmware_percent"] == 33.3
    page = login(personas["auditor"]).get("/clusters/lab/").content.decode()
    assert "<strong>33.3%</strong> of GPU nodes (1 of 3)" in page
    items = auditor.get("/api/v1/clusters/lab/checklist/").json()
    item3 = next(i for i in items if i["number"] == 3)
    assert item3["evidence"]["firmware"]["firmware_known"] == 1


def cdi_cluster(
    cdi: bool | None, toolkit: str = "v1.17.4", operator: str = "gpu-operator:v24.9.2"
) -> list[dict]:
    """gpu-a on toolkit 1.17.4, device plugin 0.17.0, operator 24.9.2 (or `operator`, the
    image's last part), and a ClusterPolicy that turns CDI off (or on, or leaves it unset)."""
    objects = copy.deepcopy(operator_cluster())
    text = json.dumps(objects)
    text = text.replace("container-toolkit:v1.17.8", f"container-toolkit:{toolkit}")
    text = text.replace("k8s-device-plugin:v0.17.3", "k8s-device-plugin:v0.17.0")
    text = text.replace("gpu-operator:v25.3.2", operator)
    objects = json.loads(text)
    spec: dict = {"operator": {"defaultRuntime": "containerd"}}
    if cdi is not None:
        spec["cdi"] = {"enabled": cdi, "default": cdi}
    objects.append(
        {
            "apiVersion": "nvidia.com/v1",
            "kind": "ClusterPolicy",
            "metadata": {"name": "cluster-policy"},
            "spec": spec,
            "status": {"state": "ready"},
        }
    )
    return objects


def test_a_cdi_only_flaw_on_a_node_not_in_cdi_mode_is_not_affected(tmp_path, personas):
    sync(tmp_path, cdi_cluster(cdi=False))
    import_real("5659")
    node = patch("gpu-a")
    # Before: below baseline on every CDI-only bound; now not affected, with the reason kept.
    assert node.patch_status == "current", node.patch_exposures
    reasons = {(e["component"], e["reason"]["code"]) for e in node.patch_not_affected}
    assert {
        ("container_toolkit", "condition_not_met"),
        ("gpu_operator", "condition_not_met"),
        ("device_plugin", "condition_not_met"),
    } <= reasons
    toolkit = next(e for e in node.patch_not_affected if e["component"] == "container_toolkit")
    assert "CDI device injection is off (ClusterPolicy cluster-policy" in toolkit["reason"]["text"]
    assert toolkit["reason"]["justification"] == "vulnerable_code_not_in_execute_path"
    page = login(personas["auditor"]).get("/nodes/lab/gpu-a/").content.decode()
    assert 'data-reason="condition_not_met"' in page
    assert "Not affected: the bulletin limits this to" in page
    patch_page = login(personas["auditor"]).get("/patch/").content.decode()
    assert "Not affected, because" in patch_page


def test_an_unset_cdi_field_is_off_on_an_operator_before_25_10(tmp_path):
    sync(tmp_path, cdi_cluster(cdi=None))  # operator 24.9.2: an unset spec.cdi.enabled is off
    import_real("5659")
    node = patch("gpu-a")
    assert node.patch_status == "current", node.patch_exposures
    toolkit = next(e for e in node.patch_not_affected if e["component"] == "container_toolkit")
    assert "defaults it off" in toolkit["reason"]["text"]


def test_a_condition_that_cannot_be_judged_stays_affected_and_unverified(tmp_path, personas):
    # The ClusterPolicy leaves spec.cdi.enabled unset, and the operator's image is pinned by
    # digest only: its version, which decides what unset means, is unknown.
    digest = "gpu-operator@sha256:" + "ab" * 32
    sync(tmp_path, cdi_cluster(cdi=None, operator=digest))
    import_real("5659")
    node = patch("gpu-a")
    assert node.patch_status == "below_baseline"
    statuses = {e["component"]: e["condition_status"] for e in node.patch_exposures}
    assert statuses["container_toolkit"] == "unverified"
    posture_evaluate()
    finding = Finding.objects.get(check_id="STACK-002", subject_name="gpu-a", status="open")
    assert finding.evidence["condition_unverified"] == ["5659"]
    page = login(personas["auditor"]).get("/nodes/lab/gpu-a/").content.decode()
    assert 'data-condition="unverified"' in page


def test_the_cdi_note_spares_a_cdi_node_and_not_a_legacy_one(tmp_path, personas):
    """5582 (CVE-2024-0132, the critical container escape): "This does not impact use cases
    where CDI is used." A toolkit at 1.16.1 is in the bound either way."""
    sync(tmp_path, cdi_cluster(cdi=True, toolkit="v1.16.1"), name="cdi")
    sync(tmp_path, cdi_cluster(cdi=False, toolkit="v1.16.1"), name="legacy")
    import_real("5582")
    on, off = (Node.objects.get(cluster__name=c, name="gpu-a") for c in ("cdi", "legacy"))
    assert "container_toolkit" not in {e["component"] for e in on.patch_exposures}
    assert "container_toolkit" in {e["component"] for e in on.patch_not_affected}
    assert "container_toolkit" in {e["component"] for e in off.patch_exposures}
