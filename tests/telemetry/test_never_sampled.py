"""A cluster no DCGM-Exporter sample was ever ingested for (DESIGN §5 ATTR-003: "GPU node with
no telemetry"): each GPU node has an ATTR-003 saying so and whether an exporter runs there, one
action covers the cluster (ingest its metrics, or deploy the exporter first), and the cluster
page says its hijack detection has no telemetry. Where some samples exist, the silent nodes
keep today's findings and actions."""

from __future__ import annotations

import copy
import json
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from posture.models import Action
from posture.services import posture_evaluate
from telemetry.services import samples_ingest
from tests.conftest import load_json
from tests.gke_world import H100, MIG, MIGTS, by_check, snapshot, sync_and_score
from tests.test_telemetry import open_findings, series

pytestmark = pytest.mark.django_db
INGEST = "`manage.py ingest_dcgm --cluster {} --prometheus URL`"


def telemetry_actions(cluster: str) -> list[Action]:
    return [a for a in Action.objects.filter(cluster__name=cluster) if "ATTR-003" in a.check_ids]


def test_a_gpu_node_of_a_cluster_never_sampled_has_no_telemetry(small_world, personas):
    (finding,) = open_findings("ATTR-003")
    assert finding.subject_name == "gpu-ts-1" and finding.severity == "medium"
    evidence = finding.evidence
    assert evidence["cluster_telemetry"] == (
        "none: no DCGM-Exporter sample has been ingested for this cluster"
    )
    assert evidence["last_sample"] is None
    assert "compute hijacking (ATTR-001)" in evidence["not_assessed"]
    # The small world runs no DCGM-Exporter: a missing exporter, not only an ingest gap.
    assert evidence["exporter_runs"] is False
    assert evidence["dcgm_exporter"].startswith("not running on the node")
    assert finding.title == (
        "GPU node gpu-ts-1 has no telemetry: no DCGM-Exporter runs there, and no sample was "
        "ever ingested for its cluster"
    )
    (action,) = telemetry_actions("lab")
    assert action.title == (
        "Deploy DCGM-Exporter on cluster lab's GPU nodes, then ingest its metrics: "
        + INGEST.format("lab")
    )


def test_the_cluster_page_says_hijack_detection_has_no_telemetry(small_world, personas):
    client = Client()
    client.force_login(personas["security_lead"])
    page = client.get("/clusters/lab/").content.decode()
    assert "Hijack detection (ATTR-001): <strong>no telemetry</strong>" in page
    samples_ingest(cluster=small_world, samples=series(timezone.now(), 5, busy=10))
    assert "Hijack detection" not in client.get("/clusters/lab/").content.decode()


def test_one_action_per_cluster_and_a_sampled_cluster_keeps_its_own(small_world, tmp_path):
    # lab sent samples once, long ago: its node is silent since (its pool's action, as
    # before). lab-2, the same world with DCGM-Exporter running, never sent any.
    long_ago = timezone.now() - timedelta(hours=3)
    samples_ingest(cluster=small_world, samples=series(long_ago, 10, busy=10))
    world = _with_exporter(load_json("small-cluster.json"))
    sync_and_score(tmp_path, world, cluster="lab-2")
    posture_evaluate()
    lab, lab2 = (
        [f for f in open_findings("ATTR-003") if f.cluster.name == name]
        for name in ("lab", "lab-2")
    )
    assert "cluster_telemetry" not in lab[0].evidence
    assert [a.title for a in telemetry_actions("lab")] == ["Deploy DCGM-Exporter on node gpu-ts-1"]
    (never,) = lab2
    assert never.evidence["exporter_runs"] is True
    assert never.evidence["dcgm_exporter"].startswith("runs on the node (pod gpu-operator/")
    assert "DCGM-Exporter runs there, but no sample was ever ingested" in never.title
    (action,) = telemetry_actions("lab-2")
    assert action.title == "Ingest DCGM-Exporter metrics for cluster lab-2: " + INGEST.format(
        "lab-2"
    )


def test_gke_nodes_of_a_cluster_never_sampled_are_one_ingest_of_the_managed_metrics(
    tmp_path, personas
):
    findings = by_check(sync_and_score(tmp_path, snapshot()), "ATTR-003")
    assert {f["subject_name"] for f in findings} == {H100, MIGTS, MIG}
    assert all(f["evidence"]["gke_managed_exporter"] for f in findings)
    (action,) = telemetry_actions("gke-lab")
    assert len(action.finding_ids) == 3
    assert action.title == (
        "Ingest GKE's managed DCGM metrics (Managed Prometheus) for cluster gke-lab: "
        + INGEST.format("gke-lab")
    )


def test_a_cluster_where_some_nodes_run_no_exporter_says_so_in_its_one_action(tmp_path, personas):
    world = snapshot()
    # The exporter's DaemonSet runs no pod on the MIG node (its pod is gone).
    world["items"] = [
        i
        for i in world["items"]
        if not (i["kind"] == "Pod" and i["metadata"]["name"] == f"dcgm-exporter-{MIG[-4:]}")
    ]
    findings = by_check(sync_and_score(tmp_path, world), "ATTR-003")
    (mig,) = [f for f in findings if f["subject_name"] == MIG]
    assert mig["evidence"]["exporter_runs"] is False
    assert "should run a pod here, but none is on the node" in mig["evidence"]["dcgm_exporter"]
    (action,) = telemetry_actions("gke-lab")
    assert action.title == (
        f"Ingest DCGM-Exporter metrics for cluster gke-lab: {INGEST.format('gke-lab')}; "
        "deploy it first on the 1 GPU node(s) that run none"
    )


def _with_exporter(world: dict) -> dict:
    """The small world with NVIDIA's DCGM-Exporter pod on gpu-ts-1 (the GPU Operator's)."""
    world = copy.deepcopy(world)
    plugin = next(i for i in world["items"] if i["metadata"]["name"].startswith("nvidia-device"))
    exporter = json.loads(json.dumps(plugin))
    exporter["metadata"]["name"] = "nvidia-dcgm-exporter-x1"
    exporter["metadata"]["uid"] = "uid-dcgm-exporter-x1"
    for c in exporter["spec"]["containers"]:
        c["image"] = "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.9-3.6.1-ubuntu22.04"
    world["items"].append(exporter)
    return world
