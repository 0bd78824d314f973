"""A cluster's stored source (what scheduled syncs read) changes only after a sync by it
succeeded, or by an explicit edit; `sync_cluster` says what it stored and scheduled."""

from __future__ import annotations

import copy
import io

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django_celery_beat.models import PeriodicTask

from inventory.models import Cluster, SyncRun
from inventory.schedule import task_name
from inventory.services import cluster_sync_from_snapshot
from inventory.sync import SyncError
from inventory.tasks import sync_cluster
from tests.conftest import load_json, world_snapshot_path
from tests.kubeapi import FakeKubeAPI

pytestmark = pytest.mark.django_db
GOOD = str(world_snapshot_path())


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("sync_cluster", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def broken_file(tmp_path) -> str:
    path = tmp_path / "broken.json"
    path.write_text("{not json")
    return str(path)


def schedule(cluster: Cluster) -> int | None:
    task = PeriodicTask.objects.filter(name=task_name(cluster)).first()
    return task.interval.every if task else None


def test_a_failed_sync_never_replaces_the_source_scheduled_syncs_read(small_world, tmp_path):
    assert small_world.snapshot_paths == [GOOD]
    with pytest.raises(SyncError):
        cluster_sync_from_snapshot(cluster=small_world, paths=[broken_file(tmp_path)])
    small_world.refresh_from_db()
    assert small_world.snapshot_paths == [GOOD]
    with pytest.raises(CommandError, match="so is the stored source"):
        run("--cluster", "lab", "--snapshot", broken_file(tmp_path), "--remember")
    small_world.refresh_from_db()
    assert small_world.snapshot_paths == [GOOD]
    # The next scheduled sync reads the stored file, as before the failures.
    assert sync_cluster.delay(small_world.pk).get()["status"] == "succeeded"


def test_a_failed_live_sync_keeps_the_stored_source(small_world, tmp_path):
    with FakeKubeAPI([]) as api:
        kubeconfig = api.kubeconfig(tmp_path)
        api.forbid("/api/v1/nodes")
        with pytest.raises(CommandError, match="previous inventory is unchanged"):
            run("--cluster", "lab", "--kubeconfig", str(kubeconfig))
    small_world.refresh_from_db()
    assert (small_world.source, small_world.kubeconfig_path) == ("snapshot", "")
    assert small_world.snapshot_paths == [GOOD]


def test_a_one_off_snapshot_sync_stores_and_schedules_nothing(personas):
    out = run("--cluster", "fresh", "--snapshot", GOOD)
    cluster = Cluster.objects.get(name="fresh")
    assert cluster.nodes.count() == 2
    assert cluster.snapshot_paths == [] and schedule(cluster) is None
    assert "fresh: stored source none (unchanged; --remember stores this one)" in out
    assert "fresh: scheduled syncs: none (no stored source to re-read)" in out
    page = Client()
    page.force_login(personas["security_lead"])
    assert "none (no stored source to re-read)" in page.get("/clusters/fresh/").content.decode()


def test_remember_and_interval_store_the_source_and_schedule_it(personas, tmp_path):
    copied = tmp_path / "lab.json"
    copied.write_text(world_snapshot_path().read_text())
    out = run("--cluster", "fresh", "--snapshot", str(copied), "--remember", "--interval", "15")
    cluster = Cluster.objects.get(name="fresh")
    assert cluster.snapshot_paths == [str(copied)] and schedule(cluster) == 15
    assert f"stored source snapshot: {copied} (this sync's source)" in out
    assert "scheduled syncs: every 15 min" in out
    # A one-off sync of another file leaves both alone; --interval 0 is an explicit edit.
    out = run("--cluster", "fresh", "--snapshot", GOOD, "--interval", "0")
    cluster.refresh_from_db()
    assert cluster.snapshot_paths == [str(copied)] and schedule(cluster) is None
    assert "scheduled syncs: none (interval 0: manual syncs only)" in out


def test_a_live_source_is_remembered_unless_told_not_to(personas, tmp_path):
    items = copy.deepcopy(load_json("small-cluster.json")["items"])
    with FakeKubeAPI(items) as api:
        kubeconfig = api.kubeconfig(tmp_path)
        out = run("--cluster", "east", "--kubeconfig", str(kubeconfig), "--no-remember")
        east = Cluster.objects.get(name="east")
        assert (east.source, east.kubeconfig_path, schedule(east)) == ("snapshot", "", None)
        assert "east: stored source none (unchanged" in out
        out = run("--cluster", "east", "--kubeconfig", str(kubeconfig), "--context", "fake")
    east.refresh_from_db()
    assert (east.source, east.kube_context, schedule(east)) == ("kubeconfig", "fake", 60)
    assert "scheduled syncs: every 60 min" in out
    assert SyncRun.objects.filter(cluster=east, status="succeeded").count() == 2


def test_a_bad_interval_is_refused_before_anything_runs(personas):
    with pytest.raises(CommandError, match="--interval"):
        run("--cluster", "fresh", "--snapshot", GOOD, "--interval", "-5")
    assert not Cluster.objects.filter(name="fresh").exists()
