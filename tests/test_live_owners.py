"""Owner chains read live as by snapshot: the live sync reads the custom resources the listed
objects name as their controllers (inventory/sources/kube_owners.py), so a RayService's pods
are the RayService's whether the cluster is read through the API or from `kubectl get`. A
group the account may not list is a warning and a shorter chain, one not served nothing."""

from __future__ import annotations

import json

import pytest

from inventory.models import Pod
from inventory.pod_workloads import pod_workloads
from inventory.services import cluster_sync, cluster_sync_from_snapshot
from inventory.sources.kube import KubeSettings, KubeSource
from inventory.sync import cluster_get_or_create
from tests.inventory import owner_chain_world as world
from tests.kubeapi import LIST_PATHS, FakeKubeAPI

pytestmark = pytest.mark.django_db

RAYSERVICE = ("ray.io/v1", "RayService", "serve-llm")
RAYCLUSTER = ("ray.io/v1", "RayCluster", "serve-llm-raycluster-k8x2p")
RAY_DISCOVERY = "/apis/ray.io/v1"


@pytest.fixture(autouse=True)
def full_lists(settings):
    settings.GPUPOSTURE_FULL_RESYNC_HOURS = 0


def ray_world(*workers: str) -> list[dict]:
    """A RayService -> the RayCluster it generates (with a spec a snapshot keeps) -> pods."""
    cluster = world.obj(*RAYCLUSTER[:2], RAYCLUSTER[2], RAYSERVICE)
    cluster["spec"] = {"headGroupSpec": {"rayStartParams": {"num-cpus": "0"}}}
    pods = [
        world.pod(f"{RAYCLUSTER[2]}-{name}", RAYCLUSTER, container=f"ray-{name}")
        for name in ("head", *workers)
    ]
    return [world.obj(*RAYSERVICE[:2], RAYSERVICE[2]), cluster, *pods]


def live_sync(api: FakeKubeAPI, tmp_path, name: str):
    source = KubeSource(
        kubeconfig=str(api.kubeconfig(tmp_path)),
        context="fake",
        settings=KubeSettings(page_size=2, read_timeout=5.0, watch_seconds=1),
    )
    cluster = cluster_get_or_create(name=name)
    return cluster, cluster_sync(cluster=cluster, source=source)


def subjects(cluster) -> set[tuple[str, str, str]]:
    """The workload each stored pod is filed under, as findings and the workloads API name it."""
    found = pod_workloads(Pod.objects.filter(cluster=cluster))
    return {(ref.kind, ref.namespace, ref.name) for ref in found.values()}


def test_a_rayservices_pods_have_the_same_subject_live_as_by_snapshot(tmp_path):
    objects = ray_world("worker-a")
    snapshot_file = tmp_path / "snapshot.json"
    snapshot_file.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    by_snapshot = cluster_get_or_create(name="by-snapshot")
    cluster_sync_from_snapshot(cluster=by_snapshot, paths=[snapshot_file])
    with FakeKubeAPI(objects) as api:
        live, run = live_sync(api, tmp_path, "live")
        paths = [r.path for r in api.requests]
    assert run.status == "succeeded" and run.warnings == []
    assert subjects(live) == subjects(by_snapshot) == {("RayService", world.NS, "serve-llm")}
    # Discovered once, then each owner kind listed: the RayCluster its pods name, then the
    # RayService the RayCluster names.
    assert paths.count(RAY_DISCOVERY) == 1
    assert {LIST_PATHS["RayCluster"], LIST_PATHS["RayService"]} <= set(paths)


def test_an_account_that_may_not_list_the_group_gets_a_warning_and_a_shorter_chain(tmp_path):
    """The RayCluster cannot be read, so its owner is not known: its pods stay under it."""
    with FakeKubeAPI(ray_world()) as api:
        api.forbid(LIST_PATHS["RayCluster"])
        api.forbid(LIST_PATHS["RayService"])
        cluster, run = live_sync(api, tmp_path, "no-ray-grant")
    assert run.status == "succeeded"
    (warning,) = run.warnings
    assert "RayCluster (ray.io/v1)" in warning and "HTTP 403" in warning
    assert "owner chains stop below it" in warning
    assert subjects(cluster) == {("RayCluster", world.NS, RAYCLUSTER[2])}


def test_a_group_the_server_does_not_serve_is_nothing_to_read(tmp_path):
    with FakeKubeAPI(ray_world()) as api:
        api.not_served = {"ray.io"}
        cluster, run = live_sync(api, tmp_path, "no-kuberay")
        ray_paths = [r.path for r in api.requests if r.path.startswith(RAY_DISCOVERY)]
    assert run.status == "succeeded" and run.warnings == []
    assert ray_paths == [RAY_DISCOVERY]  # asked once, answered 404: nothing listed
    assert subjects(cluster) == {("RayCluster", world.NS, RAYCLUSTER[2])}


def test_a_watch_resync_keeps_the_owners_of_the_last_full_sync(tmp_path, settings):
    with FakeKubeAPI(ray_world()) as api:
        live_sync(api, tmp_path, "watched")
        settings.GPUPOSTURE_FULL_RESYNC_HOURS = 24
        api.replace_objects(ray_world("worker-b"))  # a new worker pod of the same RayCluster
        asked = len(api.requests)
        cluster, run = live_sync(api, tmp_path, "watched")
        later = {r.path for r in api.requests[asked:]}
    assert run.status == "succeeded" and run.mode == "watch"
    assert not any(path.startswith(RAY_DISCOVERY) for path in later)  # nothing re-read
    assert Pod.objects.filter(cluster=cluster).count() == 2
    assert subjects(cluster) == {("RayService", world.NS, "serve-llm")}


def test_same_named_experiments_in_two_namespaces_are_each_their_own_subject(tmp_path):
    """Two tenants ran the same Katib tutorial: a privileged trial pod in each is POD-001 on
    its own namespace's Experiment, live as by snapshot, and no copy is dropped."""
    from posture.models import Finding
    from posture.services import posture_evaluate

    namespaces = [world.obj("v1", "Namespace", ns, ns=None) for ns in ("ta", "tb")]
    for item in namespaces:
        item["metadata"]["labels"] = {"gpuposture.io/tenant": item["metadata"]["name"]}
    objects = [
        *namespaces,
        *world.katib("ta", privileged=True),
        *world.katib("tb", privileged=True),
    ]
    snapshot_file = tmp_path / "snapshot.json"
    snapshot_file.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    by_snapshot = cluster_get_or_create(name="by-snapshot")
    snapshot_run = cluster_sync_from_snapshot(cluster=by_snapshot, paths=[snapshot_file])
    with FakeKubeAPI(objects) as api:
        live, run = live_sync(api, tmp_path, "live")
    assert (run.status, run.warnings) == ("succeeded", [])
    assert not [w for w in snapshot_run.warnings if "more than once" in w]
    experiments = {("Experiment", "ta", "hpo"), ("Experiment", "tb", "hpo")}
    assert subjects(live) == subjects(by_snapshot) == experiments
    posture_evaluate()
    for cluster in (live, by_snapshot):
        found = Finding.objects.filter(cluster=cluster, check_id="POD-001")
        assert {(f.subject_kind, f.subject_namespace, f.subject_name) for f in found} == experiments
