"""A tenant must never be able to break or bend the posture, and no sync run stays "running"
(issue 16 items 1 and 2), through sync, score, the CLI and the task."""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from inventory.models import Cluster, ClusterObject, DriftEvent, Node, Pod, SyncRun
from inventory.services import cluster_sync, cluster_sync_from_snapshot, cluster_sync_request
from inventory.sources.files import SnapshotFileSource
from inventory.sync import SyncError
from inventory.tasks import sync_cluster
from posture.models import Finding
from posture.services import posture_evaluate
from tests.conftest import load_json

pytestmark = pytest.mark.django_db

DEEP = "sharing:\n  timeSlicing: " + "[" * 2_000 + "]" * 2_000 + "\n"
MPS = (
    "version: v1\nsharing:\n  mps:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 8\n"
)
BROKEN_KUBECONFIG = "apiVersion: v1\nclusters: {{{ not: yaml\n"


def world() -> list[dict[str, Any]]:
    return copy.deepcopy(load_json("small-cluster.json")["items"])


def sync(cluster: Cluster, tmp_path: Path, objects: list[dict[str, Any]]) -> SyncRun:
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    return cluster_sync_from_snapshot(cluster=cluster, paths=[path])


def tenant_configmap(name: str, data: dict[str, str]) -> dict[str, Any]:
    meta = {"name": name, "namespace": "team-alpha"}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


def privileged_pod() -> dict[str, Any]:
    spec = {
        "containers": [{"name": "x", "image": "busybox", "securityContext": {"privileged": True}}]
    }
    meta = {"name": "escape-0", "namespace": "team-alpha"}
    return {"kind": "Pod", "metadata": meta, "spec": spec, "status": {"phase": "Running"}}


def no_run_left_running() -> bool:
    return not SyncRun.objects.filter(status=SyncRun.Status.RUNNING).exists()


# --- item 1 ------------------------------------------------------------------------------------


def test_a_tenant_configmap_nested_2000_deep_does_not_freeze_syncs(small_world, tmp_path):
    hostile = tenant_configmap("notes", {"config.yaml": DEEP})
    run = sync(small_world, tmp_path, [*world(), hostile, privileged_pod()])
    assert run.status == SyncRun.Status.SUCCEEDED, run.error
    assert no_run_left_running()
    # The new risky pod reached the inventory and its finding: nothing was frozen.
    assert Pod.objects.filter(cluster=small_world, name="escape-0").exists()
    posture_evaluate()
    assert Finding.objects.filter(check_id="POD-001", subject_name="escape-0", status="open")
    # And the next sync works too.
    assert sync(small_world, tmp_path, world()).status == SyncRun.Status.SUCCEEDED


def test_an_unreadable_gpu_config_is_a_stack_007_finding_on_its_node(small_world, tmp_path):
    objects = world()
    for obj in objects:
        if obj["kind"] == "ConfigMap" and obj["metadata"]["name"] == "time-slicing-config":
            obj["data"]["ts-4"] = DEEP
    run = sync(small_world, tmp_path, objects)
    assert run.status == SyncRun.Status.SUCCEEDED, run.error
    assert any("time-slicing-config key 'ts-4'" in w for w in run.warnings)
    posture_evaluate()
    findings = Finding.objects.filter(check_id="STACK-007", status="open")
    assert {f.subject_name for f in findings} == {"gpu-ts-1"}
    assert set(findings.values_list("tenants__slug", flat=True)) == {"alpha", "beta"}
    (problem,) = findings.first().evidence["unreadable"]
    assert problem["object"] == "ConfigMap gpu-operator/time-slicing-config"
    assert problem["key"] == "ts-4"
    assert problem["error"].startswith("nested deeper than 64 levels")
    # GFD's labels still say time-slicing; the replicas come from them too.
    node = Node.objects.get(cluster=small_world, name="gpu-ts-1")
    assert (node.sharing_strategy, node.time_slicing_replicas) == ("time_slicing", 4)


@pytest.mark.parametrize(
    "target",
    [
        "inventory.services.normalise",
        "inventory.sources.files.SnapshotFileSource.read",
    ],
)
def test_an_unexpected_error_ends_the_run_as_failed(small_world, tmp_path, monkeypatch, target):
    def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("injected")

    monkeypatch.setattr(target, boom)
    with pytest.raises(RuntimeError, match="injected"):
        sync(small_world, tmp_path, world())
    run = SyncRun.objects.filter(cluster=small_world).first()
    assert run.status == SyncRun.Status.FAILED
    assert run.error == "unexpected error in the sync: RuntimeError: injected"
    assert run.finished_at is not None
    assert Cluster.objects.get(pk=small_world.pk).sync_lock_until is None  # lease released


def test_a_source_that_cannot_be_set_up_ends_the_run_as_failed(small_world, monkeypatch):
    def broken(cluster: Cluster) -> Any:
        raise TypeError("no source for you")

    monkeypatch.setattr("inventory.services.source_for_cluster", broken)
    with pytest.raises(SyncError, match="no source for you"):
        cluster_sync(cluster=small_world)
    run = SyncRun.objects.filter(cluster=small_world).first()
    assert run.status == SyncRun.Status.FAILED
    assert run.error == "unexpected error in setting up: TypeError: no source for you"


@pytest.fixture
def broken_kubeconfig(tmp_path: Path) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(BROKEN_KUBECONFIG)
    return path


def test_a_broken_kubeconfig_fails_the_cli_sync_clearly(broken_kubeconfig):
    with pytest.raises(CommandError, match="cannot load cluster credentials: ParserError"):
        call_command(
            "sync_cluster",
            "--cluster",
            "prod",
            "--kubeconfig",
            str(broken_kubeconfig),
            stdout=io.StringIO(),
            stderr=io.StringIO(),
        )
    run = SyncRun.objects.get(cluster__name="prod")
    assert run.status == SyncRun.Status.FAILED
    assert "cannot load cluster credentials" in run.error


def test_a_broken_kubeconfig_fails_the_task_and_the_run(broken_kubeconfig, personas):
    cluster = Cluster.objects.create(
        name="prod", source="kubeconfig", kubeconfig_path=str(broken_kubeconfig)
    )
    result = sync_cluster.delay(cluster.pk).get()
    assert (result["status"], result["retryable"]) == ("failed", False)
    run = SyncRun.objects.get(cluster=cluster)
    assert run.status == SyncRun.Status.FAILED
    assert "cannot load cluster credentials: ParserError" in run.error


def test_a_crash_in_the_task_fails_the_run_it_was_asked_to_do(
    small_world, monkeypatch, django_capture_on_commit_callbacks
):
    def crash(**kwargs: Any) -> Any:
        raise RuntimeError("worker bug")

    monkeypatch.setattr("inventory.tasks.cluster_sync", crash)
    with (
        pytest.raises(RuntimeError, match="worker bug"),
        django_capture_on_commit_callbacks(execute=True),
    ):
        run = cluster_sync_request(cluster=small_world, trigger="page")
    run.refresh_from_db()
    assert run.status == SyncRun.Status.FAILED
    assert run.error == "the sync task failed: RuntimeError: worker bug"
    assert no_run_left_running()


def test_the_reason_recorded_first_is_kept(small_world, tmp_path, monkeypatch):
    # snapshot_apply records why it failed; the catch-all around the run must not overwrite it.
    def failing_read(self: SnapshotFileSource, progress: Any) -> list:
        return [{"kind": "Pod", "metadata": {"name": "p"}}]  # no namespace: a SnapshotError

    monkeypatch.setattr(SnapshotFileSource, "read", failing_read)
    with pytest.raises(SyncError):
        sync(small_world, tmp_path, world())
    run = SyncRun.objects.filter(cluster=small_world).first()
    assert run.error.startswith("a malformed object was read: items[0] (Pod) has no")


# --- item 2 ------------------------------------------------------------------------------------


def test_a_tenant_configmap_with_the_real_key_bends_nothing(small_world, tmp_path):
    nodes_before = sorted(Node.objects.values_list("name", "sharing_strategy", "data"))
    run = sync(small_world, tmp_path, [*world(), tenant_configmap("gpu-sharing", {"ts-4": MPS})])
    assert run.status == SyncRun.Status.SUCCEEDED, run.error
    assert run.changes["drift_events"] == 0
    assert not DriftEvent.objects.exists()
    assert sorted(Node.objects.values_list("name", "sharing_strategy", "data")) == nodes_before
    assert not ClusterObject.objects.filter(
        namespace="team-alpha", kind__in=("configmap", "sharing_config")
    )
    assert not any("team-alpha" in w for w in run.warnings)
    posture_evaluate()
    assert not Finding.objects.filter(check_id="DRIFT-001").exists()


def test_a_tenant_config_stored_before_the_rule_leaves_without_drift(small_world, tmp_path):
    # An inventory from before issue 16 kept a tenant's look-alike as a sharing config; the
    # first sync after the upgrade drops it, which is no configuration change of the cluster.
    stored = {"namespace": "team-alpha", "configmap": "mine", "key": "ts-4", "mode": "mps"}
    ClusterObject.objects.create(
        cluster=small_world,
        kind="sharing_config",
        namespace="team-alpha",
        name="mine/ts-4",
        data=stored,
        data_hash="old",
    )
    run = sync(small_world, tmp_path, world())
    assert run.changes["drift_events"] == 0
    assert not ClusterObject.objects.filter(namespace="team-alpha", kind="sharing_config")
