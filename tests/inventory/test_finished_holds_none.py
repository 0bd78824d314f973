"""A finished pod holds no GPU, read as a sync stores it: a Succeeded or Failed pod stays bound
to its node in the API, its spec still asking for GPUs, but the kubelet released its devices
when its containers ended. Its `gpu_resources` (the workloads API, the node page) is `{}`, as
the checks judge it (inventory.snapshot.Pod.is_active); rows stored before are cleared by
migration 0033. A pod that finishes between two syncs loses its holding at the second."""

from __future__ import annotations

import importlib
import json
from typing import Any

import pytest
from django.apps import apps
from django.test import Client

from inventory.models import Pod
from tests.conftest import api_client
from tests.posture.gpu_access_world import container, node, pod

CLUSTER = "lab-east"


def _pod(name: str, phase: str, gpu: dict[str, str]) -> dict[str, Any]:
    found = pod("batch", name, container(gpu=gpu), node_name="gpu-a")
    found["status"] = {"phase": phase}
    return found


def _objects(sweep_phase: str = "Succeeded") -> list[dict[str, Any]]:
    return [
        node("gpu-a", gpus=8, capacity={"nvidia.com/gpu": "8", "amd.com/gpu": "2"}),
        _pod("train-running", "Running", {"nvidia.com/gpu": "1"}),
        _pod("sweep-done", sweep_phase, {"nvidia.com/gpu": "2"}),
        _pod("probe-failed", "Failed", {"amd.com/gpu": "1"}),
        _pod("warmup-pending", "Pending", {"nvidia.com/gpu": "1"}),
    ]


def _sync(tmp_path, objects: list[dict[str, Any]]) -> None:
    from inventory.services import cluster_sync_from_snapshot
    from inventory.sync import cluster_get_or_create

    path = tmp_path / "lab.json"
    path.write_text(json.dumps({"kind": "List", "items": objects}))
    cluster_sync_from_snapshot(cluster=cluster_get_or_create(name=CLUSTER), paths=[str(path)])


@pytest.fixture
def lab(db, tmp_path):
    _sync(tmp_path, _objects())


def _workloads(personas) -> dict[str, dict[str, Any]]:
    lead = api_client(personas["security_lead"])
    rows = lead.get(f"/api/v1/workloads/?cluster={CLUSTER}&page_size=100").json()["results"]
    return {r["name"]: r for r in rows}


def test_a_finished_pod_holds_no_gpu_in_the_api(lab, personas):
    rows = _workloads(personas)
    held = {
        name: (r["phase"], r["node"] is not None, r["gpu_resources"]) for name, r in rows.items()
    }
    assert held == {
        "train-running": ("Running", True, {"nvidia.com/gpu": 1}),
        "sweep-done": ("Succeeded", True, {}),
        "probe-failed": ("Failed", True, {}),
        # Bound and not finished: active, as the checks judge it.
        "warmup-pending": ("Pending", True, {"nvidia.com/gpu": 1}),
    }


def test_the_node_page_shows_no_holding_for_a_finished_pod(lab, personas):
    client = Client()
    client.force_login(personas["security_lead"])
    page = client.get(f"/nodes/{CLUSTER}/gpu-a/").content.decode()
    assert "nvidia.com/gpu: 1" in page
    assert "nvidia.com/gpu: 2" not in page and "amd.com/gpu: 1" not in page
    # The empty cell says why: the two finished pods, not the running or pending ones.
    assert page.count("none (finished)") == 2


def test_a_pod_that_finishes_between_syncs_releases_at_the_next(db, tmp_path, personas):
    _sync(tmp_path, _objects(sweep_phase="Running"))
    assert _workloads(personas)["sweep-done"]["gpu_resources"] == {"nvidia.com/gpu": 2}
    _sync(tmp_path, _objects(sweep_phase="Succeeded"))
    assert _workloads(personas)["sweep-done"]["gpu_resources"] == {}


def test_rows_stored_before_are_cleared(lab):
    Pod.objects.update(gpu_resources={"nvidia.com/gpu": 1})  # as the sync stored them before
    migration = importlib.import_module("inventory.migrations.0033_pod_gpu_resources_active_only")
    migration.finished_hold_none(apps, None)
    stored = dict(Pod.objects.values_list("name", "gpu_resources"))
    assert stored == {
        "train-running": {"nvidia.com/gpu": 1},
        "sweep-done": {},
        "probe-failed": {},
        "warmup-pending": {"nvidia.com/gpu": 1},
    }
