"""The live path: the official kubernetes client against a Kubernetes API on 127.0.0.1.

Paging, an expired continue token, faults mid-list, 403 on one kind, bad credentials, a
malformed object: none leaves a half-applied inventory, each is recorded and classified."""

from __future__ import annotations

import copy
import socket

import pytest

from inventory.models import ClusterObject, Node, Pod, SyncRun
from inventory.services import cluster_sync
from inventory.sources.kube import KubeSettings, KubeSource
from inventory.sync import SyncError, cluster_get_or_create
from tests.conftest import load_json
from tests.kubeapi import FakeKubeAPI

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def full_lists(settings):
    """Every sync here lists everything: these tests are about the list path. Re-syncs by
    watch have their own (tests/test_watch_sync.py)."""
    settings.GPUPOSTURE_FULL_RESYNC_HOURS = 0


SECRET = {
    "apiVersion": "v1",
    "kind": "Secret",
    "metadata": {"name": "db-password", "namespace": "team-alpha"},
    "data": {"password": "c2VjcmV0"},
}


def world() -> list[dict]:
    return [*copy.deepcopy(load_json("small-cluster.json")["items"]), SECRET]


@pytest.fixture
def api():
    with FakeKubeAPI(world()) as server:
        yield server


def source(api: FakeKubeAPI, tmp_path, **settings) -> KubeSource:
    return KubeSource(
        kubeconfig=str(api.kubeconfig(tmp_path)),
        context="fake",
        settings=KubeSettings(**{"page_size": 2, "read_timeout": 5.0, **settings}),
    )


def inventory(cluster) -> tuple:
    return (
        sorted(Node.objects.filter(cluster=cluster).values_list("name", "data_hash")),
        sorted(Pod.objects.filter(cluster=cluster).values_list("namespace", "name", "data_hash")),
        sorted(
            # How each live list of admission policies went: a file has no such record.
            ClusterObject.objects.filter(cluster=cluster)
            .exclude(kind="admission_read")
            .values_list("kind", "name", "data_hash")
        ),
    )


@pytest.fixture
def synced(api, tmp_path):
    cluster = cluster_get_or_create(name="live")
    run = cluster_sync(cluster=cluster, source=source(api, tmp_path))
    assert run.status == "succeeded"
    return cluster


def test_paginated_read_only_sync_never_touches_secrets(api, synced):
    assert Pod.objects.filter(cluster=synced).count() == 5
    assert Node.objects.get(cluster=synced, name="gpu-ts-1").driver_version == "550.90.07"
    requests = api.requests
    assert {r.method for r in requests} == {"GET"}
    assert not [r for r in requests if "secret" in r.path]
    pod_pages = [r for r in requests if r.path == "/api/v1/pods"]
    assert len(pod_pages) == 3  # 5 pods, 2 per page
    assert [("continue" in r.query) for r in pod_pages] == [False, True, True]
    assert all(r.query.get("limit") == "2" for r in pod_pages)


def test_the_same_world_live_or_from_a_file_gives_the_same_inventory(synced, tmp_path):
    from inventory.services import cluster_sync_from_snapshot
    from tests.conftest import world_snapshot_path

    other = cluster_get_or_create(name="file")
    cluster_sync_from_snapshot(cluster=other, paths=[world_snapshot_path()])
    assert inventory(other)[1:] == inventory(synced)[1:]
    # The world runs no DaemonSet: the live list read that, the file only holds none, so its
    # nodes say a component with no pod there is not installed without claiming none would
    # run (inventory.components); all else of the nodes is the same.
    live, from_file = node_data(synced), node_data(other)
    assert {n: strip(d) for n, d in live.items()} == {n: strip(d) for n, d in from_file.items()}
    reasons = {r for d in from_file.values() for r in d["not_installed"].values()}
    assert reasons and all("the snapshot holds no DaemonSets" in r for r in reasons)
    assert not any("holds no DaemonSets" in str(d["not_installed"]) for d in live.values())


def node_data(cluster) -> dict[str, dict]:
    return dict(Node.objects.filter(cluster=cluster).values_list("name", "data"))


def strip(data: dict) -> dict:
    return {k: v for k, v in data.items() if k != "not_installed"}


def test_an_expired_continue_token_restarts_the_list(api, tmp_path):
    api.expire_continue_once("/api/v1/pods")
    cluster = cluster_get_or_create(name="live")
    run = cluster_sync(cluster=cluster, source=source(api, tmp_path))
    assert run.status == "succeeded"
    assert Pod.objects.filter(cluster=cluster).count() == 5  # no page counted twice
    starts = [r for r in api.requests if r.path == "/api/v1/pods" and "continue" not in r.query]
    assert len(starts) == 2


def changed_world() -> list[dict]:
    objects = world()
    for obj in objects:
        if obj["kind"] == "Node":
            obj["metadata"]["labels"]["nvidia.com/cuda.driver-version.full"] = "570.86.15"
    return objects


@pytest.mark.parametrize(
    "fault, retryable, reason",
    [
        (lambda api: api.fail("/api/v1/pods", status=500, after_pages=1), True, "HTTP 500"),
        (lambda api: api.fail("/api/v1/pods", status=503, times=5), True, "HTTP 503"),
        (lambda api: api.forbid("/apis/rbac.authorization.k8s.io/v1/clusterroles"), False, "403"),
        (lambda api: api.set_token("another-token"), False, "401"),
        (lambda api: api.delay("/api/v1/configmaps", 3), True, "cannot reach"),
    ],
    ids=["500-mid-list", "503", "403-one-kind", "bad-credentials", "read-timeout"],
)
def test_a_fault_keeps_the_last_good_inventory(api, synced, tmp_path, fault, retryable, reason):
    before = inventory(synced)
    api.replace_objects(changed_world())
    fault(api)
    with pytest.raises(SyncError) as raised:
        cluster_sync(cluster=synced, source=source(api, tmp_path, read_timeout=1.0))
    assert raised.value.retryable is retryable
    run = SyncRun.objects.filter(cluster=synced).latest("pk")
    assert run.status == "failed" and reason in run.error and run.finished_at
    assert inventory(synced) == before
    assert Node.objects.get(cluster=synced, name="gpu-ts-1").driver_version == "550.90.07"


def test_403_names_the_kind_and_what_to_grant(api, synced, tmp_path):
    api.forbid("/apis/rbac.authorization.k8s.io/v1/clusterroles")
    with pytest.raises(SyncError, match="ClusterRole.*get/list/watch"):
        cluster_sync(cluster=synced, source=source(api, tmp_path))


def test_a_malformed_object_fails_the_run_and_changes_nothing(api, synced, tmp_path):
    before = inventory(synced)
    objects = changed_world()
    objects.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": "x"}, "spec": {}})
    api.replace_objects(objects)
    with pytest.raises(SyncError) as raised:
        cluster_sync(cluster=synced, source=source(api, tmp_path))
    assert raised.value.retryable is False
    assert "malformed" in SyncRun.objects.filter(cluster=synced).latest("pk").error
    assert inventory(synced) == before


def test_connection_refused_is_retryable(tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # nothing listens here once the socket closes
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: gone\n"
        f"clusters: [{{name: gone, cluster: {{server: 'http://127.0.0.1:{port}'}}}}]\n"
        "users: [{name: gone, user: {token: not-used}}]\n"
        "contexts: [{name: gone, context: {cluster: gone, user: gone}}]\n"
    )
    cluster = cluster_get_or_create(name="gone")
    with pytest.raises(SyncError) as raised:
        cluster_sync(cluster=cluster, source=KubeSource(kubeconfig=str(kubeconfig)))
    assert raised.value.retryable is True
    assert "cannot reach" in SyncRun.objects.get(cluster=cluster).error


def test_a_broken_kubeconfig_is_not_retryable(tmp_path):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("this: is not a kubeconfig\n")
    cluster = cluster_get_or_create(name="broken")
    with pytest.raises(SyncError) as raised:
        cluster_sync(cluster=cluster, source=KubeSource(kubeconfig=str(kubeconfig)))
    assert raised.value.retryable is False
    assert "credentials" in SyncRun.objects.get(cluster=cluster).error


def test_progress_is_recorded_per_kind(synced):
    run = SyncRun.objects.filter(cluster=synced).latest("pk")
    assert run.progress["Pod"] == 5 and run.progress["Node"] == 2
    assert run.counts == run.progress


CLUSTER_POLICY = {
    "apiVersion": "nvidia.com/v1",
    "kind": "ClusterPolicy",
    "metadata": {"name": "cluster-policy"},
    "spec": {
        "mig": {"strategy": "mixed"},
        "cdi": {"enabled": True, "default": False},
        "devicePlugin": {
            "enabled": True,
            "version": "v0.17.0",
            "config": {"name": "time-slicing-config", "default": "ts-4"},
        },
    },
}


def test_the_gpu_operator_cluster_policy_is_read_and_its_changes_are_drift(api, synced, tmp_path):
    from inventory.models import DriftEvent

    api.replace_objects([*world(), CLUSTER_POLICY])
    cluster_sync(cluster=synced, source=source(api, tmp_path))
    policy = ClusterObject.objects.get(cluster=synced, kind="gpu_operator_policy")
    assert policy.data["spec"]["mig_strategy"] == "mixed"
    assert policy.data["spec"]["device_plugin_config_name"] == "time-slicing-config"
    changed = copy.deepcopy(CLUSTER_POLICY)
    changed["spec"]["devicePlugin"]["config"]["default"] = "ts-8"
    api.replace_objects([*world(), changed])
    cluster_sync(cluster=synced, source=source(api, tmp_path))
    added, event = DriftEvent.objects.filter(subject_kind="ClusterPolicy").order_by("pk")
    assert added.before == {"present": False}  # installed between two syncs: drift too
    assert event.check_id == "DRIFT-002"
    assert event.before == {"device_plugin_config_default": "ts-4"}
    assert event.after == {"device_plugin_config_default": "ts-8"}


def test_no_gpu_operator_crd_is_not_an_error(api, tmp_path):
    api.fail("/apis/nvidia.com/v1/clusterpolicies", status=404, times=10)
    cluster = cluster_get_or_create(name="plain")
    run = cluster_sync(cluster=cluster, source=source(api, tmp_path))
    assert run.status == "succeeded"
    assert not ClusterObject.objects.filter(cluster=cluster, kind="gpu_operator_policy").exists()


NIGHTLY = {
    "apiVersion": "batch/v1",
    "kind": "CronJob",
    "metadata": {"name": "nightly-compact", "namespace": "team-alpha"},
    "spec": {
        "schedule": "0 3 * * *",
        "jobTemplate": {
            "spec": {
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [
                            {
                                "name": "compact",
                                "image": "registry.example.com/alpha/compact@sha256:" + "a" * 64,
                                "securityContext": {"privileged": True},
                            }
                        ],
                    }
                }
            }
        },
    },
}


def test_a_cronjob_between_runs_is_listed_and_judged_from_its_template(tmp_path):
    from posture.models import Finding
    from posture.services import posture_evaluate

    with FakeKubeAPI([*world(), NIGHTLY]) as server:
        cluster = cluster_get_or_create(name="live")
        run = cluster_sync(cluster=cluster, source=source(server, tmp_path))
        assert run.status == "succeeded"
        assert "/apis/batch/v1/cronjobs" in {r.path for r in server.requests}
    posture_evaluate()
    (finding,) = Finding.objects.filter(check_id="POD-001", subject_kind="CronJob")
    assert (finding.subject_namespace, finding.subject_name) == ("team-alpha", "nightly-compact")
    assert finding.evidence["from_template"] is True
