"""On GKE the stack findings' fixes are ones a GKE user can make: GKE manages the driver, the
device plugin and (with its managed DCGM) the exporter, so STACK-004 says to import the driver
version and names the node's GKE version, STACK-006 says injection is GKE's, and ATTR-003's
action is to ingest GKE's managed DCGM metrics, not to deploy an exporter."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from demo.bulletins import dcgm_bulletin
from inventory.bulletins.store import ImportResult, bulletin_import
from inventory.models import Cluster
from posture.models import Action
from posture.services import posture_evaluate
from telemetry.samples import GpuSample
from telemetry.services import samples_ingest
from tests.gke_world import H100, KUBELET, MIG, MIGTS, by_check, run, snapshot, sync_and_score

pytestmark = pytest.mark.django_db


def test_stack004_on_gke_says_what_gke_manages_and_how_to_give_the_driver(tmp_path, personas):
    findings = by_check(sync_and_score(tmp_path, snapshot()), "STACK-004")
    assert {f["subject_name"] for f in findings} == {H100, MIGTS, MIG}  # still unknown: kept
    for finding in findings:
        gke = finding["evidence"]["gke"]
        assert gke["node_version"] == KUBELET
        assert "GKE node version upgrades" in gke["device_plugin"]
        assert "kube-system/nvidia-gpu-device-plugin-" in gke["device_plugin"]
        assert (
            f"import_nvidia_smi --cluster CLUSTER --node {finding['subject_name']}" in gke["driver"]
        )
        assert "On GKE" in finding["remediation"]


def test_stack006_on_gke_says_injection_is_gkes_and_stays_low(tmp_path, personas):
    findings = by_check(sync_and_score(tmp_path, snapshot()), "STACK-006")
    assert len(findings) == 3
    for finding in findings:
        assert finding["severity"] == "low"
        assert finding["evidence"]["injection"].startswith("GKE-managed")
        assert "GKE-managed" in finding["title"]


def test_a_stack_finding_off_gke_has_no_gke_evidence(tmp_path, personas):
    world = snapshot()
    for item in world["items"]:
        if item["kind"] == "Node":
            item["metadata"]["labels"].pop("cloud.google.com/gke-nodepool")
    findings = sync_and_score(tmp_path, world)
    assert all("gke" not in f["evidence"] for f in by_check(findings, "STACK-004"))
    assert all("injection" not in f["evidence"] for f in by_check(findings, "STACK-006"))


def test_attr003_on_gke_asks_to_ingest_the_managed_exporters_metrics(tmp_path, personas):
    sync_and_score(tmp_path, snapshot())
    now = timezone.now()
    samples = [
        GpuSample(
            time=now - timedelta(minutes=m),
            hostname=H100,
            gpu="0",
            uuid="GPU-11111111-2222-3333-4444-555555555555",
            model="NVIDIA H100 80GB HBM3",
            util=40.0,
        )
        for m in (0, 5, 10)
    ]
    samples_ingest(cluster=Cluster.objects.get(name="gke-lab"), samples=samples)
    posture_evaluate()
    exported = run(
        "export_findings", "--format", "json", "--cluster", "gke-lab", "--status", "open"
    )
    findings = by_check(json.loads(exported), "ATTR-003")
    assert {f["subject_name"] for f in findings} == {MIGTS, MIG}  # the H100 sends samples
    for finding in findings:
        assert finding["evidence"]["gke_managed_exporter"].startswith("gke-managed-system/")
        assert "Managed Service for Prometheus" in finding["evidence"]["what_would_help"]
    titles = {a.title for a in Action.objects.all() if "ATTR-003" in a.check_ids}
    assert titles == {
        "Ingest GKE's managed DCGM metrics (Managed Prometheus) for pool a2-migts",
        "Ingest GKE's managed DCGM metrics (Managed Prometheus) for pool a2-mig",
    }


def test_gkes_managed_exporter_is_upgraded_by_gke_not_by_editing_its_daemonset(tmp_path, personas):
    bulletin_import(data=dcgm_bulletin(), source="test", result=ImportResult())
    findings = by_check(sync_and_score(tmp_path, snapshot()), "STACK-003")
    assert {f["subject_name"] for f in findings} == {H100, MIGTS, MIG}
    for finding in findings:
        upgrade = finding["evidence"]["upgrade_by"]
        assert upgrade["managed_by"] == "gke"  # GKE reverts edits to its DaemonSet
        assert "DCGM exporter" in upgrade["how"] and "Helm chart" not in upgrade["how"]
