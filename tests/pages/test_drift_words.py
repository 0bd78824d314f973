"""The drift table shows only what changed ("replicas: 2 → 4"), not two whole JSON objects
with every unchanged null (red-team rtpages item 5)."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from gpuposture.base.changes import PathChange, changed_paths
from inventory.models import DriftEvent

ENTRY_BEFORE: dict[str, Any] = {
    "name": "nvidia.com/gpu",
    "rename": None,
    "replicas": 2,
    "devices": [],
}
CONFIG_BEFORE: dict[str, Any] = {
    "key": "ts-4",
    "mig_strategy": None,
    "replicas": 2,
    "entries": [ENTRY_BEFORE],
}
CONFIG_AFTER = {**CONFIG_BEFORE, "replicas": 4, "entries": [{**ENTRY_BEFORE, "replicas": 4}]}


def test_only_changed_paths_of_a_config():
    assert changed_paths(CONFIG_BEFORE, CONFIG_AFTER) == [
        PathChange("entries nvidia.com/gpu replicas", "2", "4"),
        PathChange("replicas", "2", "4"),
    ]


def test_taints_and_per_container_fields():
    assert changed_paths({"taints": ["a=b:NoSchedule"]}, {"taints": ["c=:NoSchedule"]}) == [
        PathChange("taints", "a=b:NoSchedule", "c=:NoSchedule")
    ]
    before = {"containers": {"plugin": {"args": ["--a"]}}, "spec_sha256": "x"}
    after = {"containers": {"plugin": {"args": ["--a", "--b"]}}, "spec_sha256": "y"}
    assert changed_paths(before, after) == [
        PathChange("container plugin args", "--a", "--a, --b"),
        PathChange("spec sha256", "x", "y"),
    ]


def test_an_added_object_lists_what_it_has():
    assert changed_paths(
        {"present": False}, {"role": "ClusterRole x", "node_verbs": ["patch"]}
    ) == [
        PathChange("node verbs", None, "patch"),
        PathChange("role", None, "ClusterRole x"),
    ]


@pytest.mark.django_db
def test_cluster_page_drift_shows_only_the_change(small_world, personas):
    DriftEvent.objects.create(
        cluster=small_world,
        sync_run=small_world.sync_runs.first(),
        kind="sharing_config",
        check_id="DRIFT-001",
        subject_kind="ConfigMap",
        subject_namespace="gpu-operator",
        subject_name="time-slicing-config",
        summary="device-plugin config changed: replicas",
        before=CONFIG_BEFORE,
        after=CONFIG_AFTER,
        detected_at=timezone.now(),
    )
    client = Client()
    client.force_login(personas["security_lead"])
    html = client.get("/clusters/lab/").content.decode()
    cell = html.split("data-drift-changes>")[1].split("</td>")[0]
    assert '<span class="change-key">replicas</span>: <del>2</del> → <ins>4</ins>' in cell
    assert "null" not in cell and "mig strategy" not in cell and "ts-4" not in cell
