"""A host the Kubernetes API does not list, imported with `import_nvidia_smi`, becomes a node
described by nvidia-smi only (DESIGN §4, §7): listed by the API and pages, kept by syncs that
do not list it, merged by one that does, judged on its driver and firmware only."""

from __future__ import annotations

import copy
import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from inventory.hostfacts import node_from_host_facts
from inventory.models import Cluster, Node, NodeHostFacts
from inventory.node_components import deployed_unknown, node_components
from inventory.sources.nvidia_smi import parse_nvidia_smi, summarise
from posture.models import Finding
from posture.services import posture_evaluate
from tests.conftest import DATA, api_client, load_json, world_snapshot_path
from tests.realworld import realworld

pytestmark = pytest.mark.django_db
SMI = DATA / "nvidia-smi"


def run(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def import_host(cluster: str = "lab", xml: str = "h100-mig.xml", node: str = "smi-1"):
    return run("import_nvidia_smi", "--cluster", cluster, "--node", node, str(SMI / xml))


def api_nodes(user, cluster: str = "lab") -> dict[str, dict]:
    rows = api_client(user).get(f"/api/v1/nodes/?cluster={cluster}").json()["results"]
    return {row["name"]: row for row in rows}


def test_an_unlisted_host_becomes_a_node_on_the_api_and_pages(small_world, personas):
    _out, err = import_host()
    assert "created node smi-1, described by nvidia-smi only" in err
    node = api_nodes(personas["auditor"])["smi-1"]
    assert node["described_by"] == "nvidia-smi"
    assert (node["gpu_model"], node["gpu_count"]) == ("NVIDIA H100 80GB HBM3", 2)
    assert (node["driver_version"], node["firmware_version"]) == ("550.90.07", "96.00.99.00.01")
    assert node["sharing_strategy"] == "mig"  # the host's MIG mode
    assert node["taints"] == [] and node["labels"] == {}
    assert node["components"]["container_toolkit"]["state"] == "unknown"
    # The API's own nodes say who describes them too.
    assert api_nodes(personas["auditor"])["gpu-ts-1"]["described_by"] == "kubernetes"
    client = Client()
    client.force_login(personas["auditor"])
    page = client.get("/nodes/lab/smi-1/").content.decode()
    assert 'data-described-by="nvidia-smi"' in page
    assert 'data-described-by="nvidia-smi"' in client.get("/nodes/").content.decode()


def test_a_sync_that_does_not_list_the_host_keeps_it_and_one_that_does_merges(
    small_world, tmp_path
):
    import_host(node="gpu-extra")
    call_command("sync_cluster", "--cluster", "lab", "--snapshot", str(world_snapshot_path()))
    kept = Node.objects.get(cluster=small_world, name="gpu-extra")
    assert (kept.described_by, kept.driver_version) == ("nvidia-smi", "550.90.07")
    # The API now lists it: its record wins, the host's facts fill the gaps (the VBIOS).
    snapshot = load_json("small-cluster.json")
    listed = copy.deepcopy(next(o for o in snapshot["items"] if o["kind"] == "Node"))
    listed["metadata"]["name"] = "gpu-extra"
    snapshot["items"].append(listed)
    with_host = tmp_path / "with-host.json"
    with_host.write_text(json.dumps(snapshot))
    call_command("sync_cluster", "--cluster", "lab", "--snapshot", str(with_host))
    merged = Node.objects.get(cluster=small_world, name="gpu-extra")
    assert merged.described_by == "kubernetes"
    assert merged.labels == listed["metadata"]["labels"]
    assert merged.firmware_version == "96.00.99.00.01"
    # Listed once, it is the API's: a sync that no longer lists it deletes it.
    call_command("sync_cluster", "--cluster", "lab", "--snapshot", str(world_snapshot_path()))
    assert not Node.objects.filter(name="gpu-extra").exists()


def test_a_reimport_updates_and_malformed_xml_changes_nothing(small_world, tmp_path):
    import_host()
    _out, err = import_host(xml="a100-nomig.xml")
    assert "updated node smi-1" in err
    node = Node.objects.get(name="smi-1")
    assert (node.driver_version, node.gpu_model) == ("535.183.01", "NVIDIA A100-SXM4-40GB")
    assert node.sharing_strategy == "none"
    before = (node.data, NodeHostFacts.objects.get(node_name="smi-1").facts)
    bad = tmp_path / "smi-1.xml"
    bad.write_text("<nvidia_smi_log><gpu id='x'>")
    with pytest.raises(CommandError, match="not XML"):
        run("import_nvidia_smi", "--cluster", "lab", str(bad))
    node.refresh_from_db()
    assert (node.data, NodeHostFacts.objects.get(node_name="smi-1").facts) == before


def test_the_cluster_record_is_created_if_new_but_not_for_refused_input(tmp_path):
    bad = tmp_path / "h.xml"
    bad.write_text("not xml at all")
    with pytest.raises(CommandError, match="XML"):
        run("import_nvidia_smi", "--cluster", "bare", str(bad))
    assert not Cluster.objects.filter(name="bare").exists()
    _out, err = import_host(cluster="bare")
    assert "created cluster bare" in err
    assert Node.objects.get(cluster__name="bare", name="smi-1").is_gpu_node


def test_only_the_driver_and_firmware_are_judged_and_nobody_is_affected(small_world):
    from inventory.bulletins.store import bulletins_import_paths

    bulletins_import_paths(
        paths=[str(realworld("csaf", f"nvidia-{n}.json")) for n in ("5586", "5582")]
    )
    import_host()
    node = Node.objects.get(name="smi-1")
    # 550.90.07 is below the R550 fix of nvidia-5586; the toolkit (5582) is not judged.
    assert node.patch_status == "below_baseline"
    assert {e["component"] for e in node.patch_exposures} == {"driver"}
    assert node.patch_unknown == []
    assert any(n.startswith("not judged: container_toolkit") for n in node.patch_notes)
    posture_evaluate()
    on_host = Finding.objects.filter(subject_name="smi-1", status="open")
    checks = set(on_host.values_list("check_id", flat=True))
    assert "STACK-001" in checks
    # Kubernetes-only facts (taints, CDI, exporter, toolkit) are unknown there: no finding.
    assert not checks & {"STACK-004", "K8S-002", "STACK-006", "ATTR-003"}
    assert not on_host.filter(tenants__isnull=False).exists()


def test_stack004_reports_only_what_nvidia_smi_shows_on_a_host_only_node():
    facts = summarise(parse_nvidia_smi((SMI / "h100-mig.xml").read_bytes()))
    node = node_from_host_facts("smi-1", facts)
    assert deployed_unknown(node) == []
    no_driver = node_from_host_facts("smi-2", {**facts, "driver_version": None})
    assert deployed_unknown(no_driver) == ["driver"]
    entry = node_components(node)["device_plugin"]
    assert entry["state"] == "unknown" and "does not list this node" in entry["source"]
