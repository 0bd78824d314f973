"""DRIFT-001..003 and DRIFT-006: one finding per object that changed (DESIGN §5 identity is
(check, subject)), listing its changes in the drift window; it resolves when the last leaves
the window and a later change reopens it, same id, first seen kept."""

from __future__ import annotations

import copy
import json
from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from inventory.models import DriftEvent
from inventory.services import cluster_sync_from_snapshot
from posture.models import Finding
from posture.services import posture_evaluate
from tests.conftest import load_json


def world(replicas: int, taint: bool = False) -> list[dict]:
    objects = copy.deepcopy(load_json("small-cluster.json")["items"])
    for obj in objects:
        if obj["kind"] == "ConfigMap" and obj["metadata"]["name"] == "time-slicing-config":
            obj["data"]["ts-4"] = obj["data"]["ts-4"].replace(
                "replicas: 4", f"replicas: {replicas}"
            )
        if taint and obj["kind"] == "Node" and obj["metadata"]["name"] == "gpu-ts-1":
            obj["spec"]["taints"] = [{"key": "dedicated", "value": "ml", "effect": "NoSchedule"}]
    return objects


def sync(cluster, tmp_path, objects, name: str) -> None:
    path = tmp_path / name
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    assert cluster_sync_from_snapshot(cluster=cluster, paths=[path]).status == "succeeded"
    posture_evaluate()


def config_findings():
    return Finding.objects.filter(
        check_id="DRIFT-001", subject_kind="ConfigMap", subject_name="time-slicing-config"
    )


@pytest.mark.django_db
def test_a_flip_and_its_reversal_are_one_finding_listing_both(small_world, tmp_path):
    sync(small_world, tmp_path, world(8, taint=True), "v2.json")
    sync(small_world, tmp_path, world(4), "v3.json")  # flipped back, taint gone again
    assert DriftEvent.objects.filter(check_id="DRIFT-001", subject_kind="ConfigMap").count() == 2
    (finding,) = config_findings()
    assert finding.status == "open"
    changes = finding.evidence["changes"]
    assert [(c["before"]["replicas"], c["after"]["replicas"]) for c in changes] == [(8, 4), (4, 8)]
    assert changes[0]["detected_at"] >= changes[1]["detected_at"]  # newest first
    assert finding.evidence["change_count"] == 2
    assert (finding.evidence["before"], finding.evidence["after"]) == (
        changes[0]["before"],
        changes[0]["after"],
    )
    assert "2 changes in the drift window" in finding.title
    (node_drift,) = Finding.objects.filter(check_id="DRIFT-003", subject_name="gpu-ts-1")
    assert node_drift.evidence["change_count"] == 2


@pytest.mark.django_db
def test_a_later_change_reopens_the_same_finding_with_its_first_seen(
    small_world, tmp_path, settings
):
    sync(small_world, tmp_path, world(8), "v2.json")
    (first,) = config_findings()
    days = settings.GPUPOSTURE_DRIFT_WINDOW_DAYS + 1
    with time_machine.travel(timezone.now() + timedelta(days=days), tick=False):
        posture_evaluate()  # the change left the window
        first.refresh_from_db()
        assert first.status == "resolved"
        sync(small_world, tmp_path, world(2), "v3.json")
    (again,) = config_findings()
    assert (again.pk, again.status, again.first_seen) == (first.pk, "open", first.first_seen)
    # Only the change within the window is listed.
    assert [c["after"]["replicas"] for c in again.evidence["changes"]] == [2]
