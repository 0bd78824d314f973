"""GKE's managed DCGM (gke-managed-system) end to end: its exporter is the DCGM exporter (so a
DCGM-Exporter bulletin judges it, never "component not present"), and its namespace is the
platform's where the cluster is GKE and the namespace runs only GKE's managed DCGM."""

from __future__ import annotations

import json

import pytest
from django.core.management.base import CommandError

from demo.bulletins import dcgm_bulletin
from inventory.bulletins.store import ImportResult, bulletin_import
from inventory.models import Cluster, Node
from inventory.platform import stored_platform_namespaces
from inventory.sources.images import component_of, stack_version
from tests.gke_world import (
    EXPORTER_DIGEST,
    EXPORTER_TAGGED,
    H100,
    MANAGED,
    by_check,
    daemonset,
    run,
    snapshot,
    sync_and_score,
)

pytestmark = pytest.mark.django_db


def test_gkes_exporter_image_is_the_dcgm_exporter_and_its_tag_reads_as_nvidias():
    assert component_of(EXPORTER_TAGGED) == "dcgm_exporter"
    assert component_of(EXPORTER_DIGEST) == "dcgm_exporter"
    # <DCGM>-<exporter>-gke.<n>: NVIDIA's two release numbers, as NVIDIA's 4.4.1-4.6.0-ubuntu22.04.
    assert stack_version(EXPORTER_TAGGED) == "4.4.1-4.6.0"
    assert stack_version(EXPORTER_DIGEST) is None
    # GKE's own device plugin numbers its builds itself: still unknown.
    assert stack_version("gke.gcr.io/nvidia-gpu-device-plugin:v0.0.35-gke.1") is None
    # Another GKE-built image with a single number is not read as a DCGM/exporter pair.
    assert stack_version("gke.gcr.io/gke-dcgm-exporter:4.6.0-gke.3") is None


def vex_statuses(cluster: str = "gke-lab") -> dict[str, set[tuple[str, str, str]]]:
    try:
        document = json.loads(run("export_vex", "--cluster", cluster))
    except CommandError:
        return {}  # no statement at all: nothing known either way
    found: dict[str, set[tuple[str, str, str]]] = {}
    for s in document["statements"]:
        node = s["products"][0]["@id"].rsplit(":", 1)[-1]
        entry = (s["vulnerability"]["name"], s["status"], s.get("justification", ""))
        found.setdefault(node, set()).add(entry)
    return found


@pytest.mark.parametrize("exporter", [EXPORTER_TAGGED, EXPORTER_DIGEST])
def test_a_dcgm_exporter_bulletin_is_never_not_present_on_gkes_managed_exporter(
    tmp_path, personas, exporter
):
    bulletin_import(data=dcgm_bulletin(), source="test", result=ImportResult())
    findings = sync_and_score(tmp_path, snapshot(exporter))
    node = Node.objects.get(name=H100)
    assert "dcgm_exporter" not in (node.data.get("not_installed") or {})
    statuses = vex_statuses().get(H100, set())
    assert not any(j == "component_not_present" for _, _, j in statuses), statuses
    if exporter == EXPORTER_TAGGED:
        # Exporter 4.6.0 < 4.8.2 and its DCGM 4.4.1 < 4.5.3: affected, as NVIDIA's image would be.
        assert node.data["dcgm_exporter_version"] == "4.4.1-4.6.0"
        assert {status for _, status, _ in statuses} == {"affected"}
    else:
        # Deployed, version unknown: under investigation, saying its version was not read
        # (never not_affected, and never left out as if there were nothing to say).
        assert node.data["dcgm_exporter_version"] is None
        assert "dcgm_exporter" in node.data["deployed"]
        assert statuses == {("CVE-2026-47483", "under_investigation", "")}
        unknown = by_check(findings, "STACK-004")[0]["evidence"]
        assert "dcgm_exporter_version" in unknown["unknown"]


def test_gkes_managed_dcgm_namespace_is_the_platforms(tmp_path, personas):
    findings = sync_and_score(tmp_path, snapshot())
    # No POD-001/003/005 on GKE's own privileged nv-hostengine (ATTR-003 may name its exporter
    # as what runs on the node, with no sample ingested: that is telemetry, not the pods).
    managed = [f for f in findings if MANAGED in json.dumps(f) and f["check"] != "ATTR-003"]
    assert managed == []
    for finding in by_check(findings, "STACK-004"):
        assert "unclassified" not in finding["tenants"]
    # The same from the stored inventory (a watch re-sync, telemetry attribution).
    assert MANAGED in stored_platform_namespaces(Cluster.objects.get(name="gke-lab"))


def test_the_namespace_name_alone_makes_nothing_the_platforms(tmp_path, personas):
    # A namespace named gke-managed-system that also runs something else is judged as ever.
    other = daemonset(
        MANAGED,
        "miner",
        {"app": "miner"},
        [
            {
                "name": "m",
                "image": "docker.io/someone/miner:1",
                "securityContext": {"privileged": True},
            }
        ],
    )
    findings = sync_and_score(tmp_path, snapshot(extra=[other]))
    privileged = {f["subject_name"] for f in by_check(findings, "POD-001")}
    assert privileged == {"miner", "nvidia-dcgm"}


def test_gkes_managed_dcgm_outside_gke_is_not_the_platforms(tmp_path, personas):
    world = snapshot()
    for item in world["items"]:
        if item["kind"] == "Node":
            labels = item["metadata"]["labels"]
            for key in [k for k in labels if k.startswith("cloud.google.com/")]:
                labels.pop(key)
    findings = sync_and_score(tmp_path, world)
    assert {f["subject_name"] for f in by_check(findings, "POD-001")} == {"nvidia-dcgm"}
