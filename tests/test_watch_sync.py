"""Re-sync by watch: after a full list, a live cluster's next sync asks the API server only for
what changed since the resourceVersions it read, and must end with exactly the inventory a full
list of the same world gives. What reaches every GPU node's facts, an expired resourceVersion,
another account or an old full list send it back to listing everything."""

from __future__ import annotations

import copy
from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from inventory.models import Cluster, ClusterObject, DriftEvent, Node, Pod
from inventory.services import cluster_sync
from inventory.sources.kube import KubeSettings, KubeSource
from inventory.sources.kube_kinds import KINDS, NOT_LISTED, NOT_SERVED
from inventory.sync import SyncError, cluster_get_or_create
from posture.read_model import cluster_snapshot
from tests.conftest import load_json
from tests.kubeapi import NODES, FakeKubeAPI

pytestmark = pytest.mark.django_db


def world() -> list[dict]:
    return copy.deepcopy(load_json("small-cluster.json")["items"])


def item(objects: list[dict], kind: str, name: str) -> dict:
    return next(o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name)


@pytest.fixture
def api():
    with FakeKubeAPI(world()) as server:
        yield server


def source(api: FakeKubeAPI, tmp_path, context: str = "fake") -> KubeSource:
    return KubeSource(
        kubeconfig=str(api.kubeconfig(tmp_path)),
        context=context,
        settings=KubeSettings(page_size=3, read_timeout=5.0, watch_seconds=1),
    )


def inventory(cluster: Cluster) -> tuple:
    """Everything a sync writes, minus row ids and times."""
    return (
        sorted(
            Node.objects.filter(cluster=cluster).values_list(
                "name", "data_hash", "driver_version", "device_plugin_version", "labels"
            )
        ),
        sorted(
            Pod.objects.filter(cluster=cluster).values_list(
                "namespace", "name", "data_hash", "node__name", "tenant__slug", "phase"
            )
        ),
        sorted(
            ClusterObject.objects.filter(cluster=cluster).values_list(
                "kind", "namespace", "name", "data_hash"
            )
        ),
    )


@pytest.fixture
def listed(api, tmp_path, small_world):
    """The cluster after its first (full) sync, with the tenants of the small world."""
    cluster = cluster_get_or_create(name="live")
    run = cluster_sync(cluster=cluster, source=source(api, tmp_path))
    assert run.mode == "full"
    cluster.refresh_from_db()
    return cluster


def changed_world() -> list[dict]:
    """A pod changed, one finished and gone, one new, and a node relabelled."""
    objects = world()
    trainer = item(objects, "Pod", "trainer-0")
    trainer["metadata"].setdefault("labels", {})["restarted"] = "yes"
    trainer["spec"]["containers"][0]["image"] = "registry.example.internal/alpha/trainer:v2"
    objects.remove(item(objects, "Pod", "batch-done"))
    extra = copy.deepcopy(item(objects, "Pod", "inference-0"))
    extra["metadata"]["name"] = "inference-1"
    objects.append(extra)
    item(objects, "Node", "gpu-ts-1")["metadata"]["labels"]["topology.example/rack"] = "r7"
    return objects


def test_the_first_sync_lists_and_remembers_where_each_kind_was_read(api, listed, tmp_path):
    state = listed.watch_state
    assert state["source"] == source(api, tmp_path).describe()
    assert set(state["kinds"]) >= {kind for kind, _, _ in KINDS}
    assert listed.last_full_sync_at is not None


def test_a_watch_resync_equals_a_full_list_of_the_same_world(api, listed, tmp_path):
    api.replace_objects(changed_world())
    # Kinds the server does not serve (no Cilium, no Gateway API here) are neither watched
    # nor asked again until the next full list, and their 404 is no warning.
    before = len(api.requests)
    read_at = set(listed.watch_state["kinds"].values()) - {NOT_LISTED, NOT_SERVED}
    run = cluster_sync(cluster=listed, source=source(api, tmp_path))
    assert (run.status, run.mode, run.warnings) == ("succeeded", "watch", [])
    asked = [r for r in api.requests[before:] if r.query.get("limit") != "1"]
    probed = {r.path for r in api.requests[before:] if r.query.get("limit") == "1"}
    assert "/apis/cilium.io/v2/ciliumclusterwidenetworkpolicies" not in probed
    assert not [r for r in asked if "ciliumclusterwidenetworkpolicies" in r.path]
    assert NODES not in probed
    assert all(r.query.get("watch", "").lower() in ("true", "1") for r in asked)
    assert {r.query["resourceVersion"] for r in asked} == read_at
    assert set(listed.watch_state["kinds"].values()) - {NOT_LISTED, NOT_SERVED} == {
        api.resource_version
    }
    assert not any("secret" in r.path for r in api.requests)
    assert run.changes["pods"] == {"created": 1, "updated": 1, "deleted": 1}
    assert run.counts["Pod"] == 3 and run.counts["Node"] == 1
    # The yardstick: a second cluster listed from scratch from the same world.
    fresh = cluster_get_or_create(name="fresh")
    cluster_sync(cluster=fresh, source=source(api, tmp_path))
    assert inventory(listed) == inventory(fresh)
    # The node's relabelling is drift (DRIFT-003), found by the watch re-sync too.
    event = DriftEvent.objects.get(cluster=listed, check_id="DRIFT-003")
    assert event.sync_run_id == run.pk and event.subject_name == "gpu-ts-1"


def test_a_watched_pod_asking_a_fraction_of_a_gpu_is_warned_of_as_a_full_sync_does(
    api, listed, tmp_path
):
    objects = world()
    extra = copy.deepcopy(item(objects, "Pod", "inference-0"))
    extra["metadata"]["name"] = "inference-half"
    for container in extra["spec"]["containers"]:
        for part in ("requests", "limits"):
            if "nvidia.com/gpu" in container.get("resources", {}).get(part, {}):
                container["resources"][part]["nvidia.com/gpu"] = "500m"
    objects.append(extra)
    api.replace_objects(objects)
    run = cluster_sync(cluster=listed, source=source(api, tmp_path))
    assert run.mode == "watch"
    warned = [w for w in run.warnings if "inference-half" in w]
    assert warned and "500m" in warned[0] and "fraction" in warned[0]
    # Only the watched pod's own warning: nothing of a whole snapshot's.
    assert len(run.warnings) == len(warned)


def test_nothing_changed_writes_nothing(api, listed, tmp_path):
    run = cluster_sync(cluster=listed, source=source(api, tmp_path))
    assert run.mode == "watch" and sum(run.counts.values()) == 0
    assert all(sum(c.values()) == 0 for k, c in run.changes.items() if isinstance(c, dict))


def test_a_gpu_stack_pod_upgrade_rederives_its_node(api, listed, tmp_path):
    objects = world()
    plugin = item(objects, "Pod", "nvidia-device-plugin-daemonset-x1")
    plugin["spec"]["containers"][0]["image"] = "nvcr.io/nvidia/k8s-device-plugin:v0.17.3"
    api.replace_objects(objects)
    run = cluster_sync(cluster=listed, source=source(api, tmp_path))
    assert run.mode == "watch" and run.changes["nodes_rederived"] == 1
    assert Node.objects.get(cluster=listed, name="gpu-ts-1").device_plugin_version == "0.17.3"
    # The node itself did not change: its object was read with one GET.
    assert any(r.path == "/api/v1/nodes/gpu-ts-1" for r in api.requests)


def test_a_sharing_config_change_lists_everything(api, listed, tmp_path):
    objects = world()
    config = item(objects, "ConfigMap", "time-slicing-config")
    key = next(iter(config["data"]))
    config["data"][key] = config["data"][key].replace("replicas: 4", "replicas: 8")
    assert config["data"][key] != item(world(), "ConfigMap", "time-slicing-config")["data"][key]
    api.replace_objects(objects)
    run = cluster_sync(cluster=listed, source=source(api, tmp_path))
    assert (run.status, run.mode) == ("succeeded", "full")
    assert any("listed everything" in w and "time-slicing-config" in w for w in run.warnings)
    assert DriftEvent.objects.filter(cluster=listed, check_id="DRIFT-001").exists()


def test_a_tenant_configmap_shaped_like_the_config_is_no_node_wide_change(api, listed, tmp_path):
    # A tenant's ConfigMap is never GPU configuration (issue 16): a watch sees it and moves on,
    # without a full list, drift or a stored copy, however it is written.
    config = item(world(), "ConfigMap", "time-slicing-config")
    mine = {**config, "metadata": {"name": "mine", "namespace": "team-alpha"}}
    deep = "sharing:\n  timeSlicing: " + "[" * 2_000 + "]" * 2_000 + "\n"
    hostile = {
        **config,
        "metadata": {"name": "deep", "namespace": "team-alpha"},
        "data": {"x": deep},
    }
    api.replace_objects([*world(), mine, hostile])
    run = cluster_sync(cluster=listed, source=source(api, tmp_path))
    assert (run.status, run.mode) == ("succeeded", "watch")
    assert not DriftEvent.objects.exists()
    assert not ClusterObject.objects.filter(
        cluster=listed, namespace="team-alpha", kind="configmap"
    )


def test_an_expired_resource_version_lists_everything(api, listed, tmp_path):
    api.replace_objects(changed_world())
    api.expire_watch_once("/api/v1/pods")
    run = cluster_sync(cluster=listed, source=source(api, tmp_path))
    assert (run.status, run.mode) == ("succeeded", "full")
    assert any("too old resource version" in w for w in run.warnings)
    assert Pod.objects.filter(cluster=listed, name="inference-1").exists()


def test_a_watch_refused_with_an_http_410_lists_everything(api, listed, tmp_path):
    """A server may answer an expired resourceVersion with an HTTP 410 instead of an ERROR
    event: the same full list, not a failed run whose next attempts watch from the same place
    until the full resync."""
    api.replace_objects(changed_world())
    api.fail("/api/v1/pods", status=410)
    run = cluster_sync(cluster=listed, source=source(api, tmp_path))
    assert (run.status, run.mode) == ("succeeded", "full")
    assert any("watching Pod: HTTP 410" in w for w in run.warnings)
    assert Pod.objects.filter(cluster=listed, name="inference-1").exists()


def test_a_watch_that_fails_keeps_the_last_good_inventory(api, listed, tmp_path):
    before, state = inventory(listed), dict(listed.watch_state)
    api.replace_objects(changed_world())
    api.fail("/api/v1/pods", status=503)
    with pytest.raises(SyncError) as raised:
        cluster_sync(cluster=listed, source=source(api, tmp_path))
    assert raised.value.retryable
    assert inventory(listed) == before
    listed.refresh_from_db()
    assert listed.watch_state == state  # the next attempt watches from the same place
    run = listed.sync_runs.order_by("-pk").first()
    assert run.status == "failed" and run.error.startswith("watching Pod: HTTP 503")
    assert run.mode == "watch"  # the run says which read failed: the watch, not a full list


def test_another_account_or_an_old_full_list_lists_everything(api, listed, tmp_path, settings):
    api.replace_objects(changed_world())
    other = source(api, tmp_path)
    other.context = None  # the kubeconfig's current context: another description
    assert cluster_sync(cluster=listed, source=other).mode == "full"
    listed.refresh_from_db()
    later = timezone.now() + timedelta(hours=settings.GPUPOSTURE_FULL_RESYNC_HOURS + 1)
    with time_machine.travel(later, tick=False):
        assert cluster_sync(cluster=listed, source=other).mode == "full"
    assert cluster_sync(cluster=listed, source=other).mode == "watch"


def test_a_namespace_claimed_by_label_moves_its_pods_to_the_tenant(api, tmp_path, small_world):
    objects = world()
    namespace = copy.deepcopy(item(objects, "Namespace", "beta-prod"))
    namespace["metadata"] = {"name": "shared-x", "labels": {}}
    job = copy.deepcopy(item(objects, "Pod", "inference-0"))
    job["metadata"].update(name="job-0", namespace="shared-x")
    objects += [namespace, job]
    api.replace_objects(objects)
    cluster = cluster_get_or_create(name="claims")
    cluster_sync(cluster=cluster, source=source(api, tmp_path))
    assert Pod.objects.get(cluster=cluster, name="job-0").tenant is None
    namespace["metadata"]["labels"] = {"gpuposture.io/tenant": "beta"}
    api.replace_objects(objects)
    run = cluster_sync(cluster=cluster, source=source(api, tmp_path))
    assert run.mode == "watch" and run.counts["Namespace"] == 1
    assert Pod.objects.get(cluster=cluster, name="job-0").tenant.slug == "beta"


def test_a_finished_job_deleted_by_its_ttl_needs_no_full_list(api, tmp_path, small_world):
    # An unowned Job is kept for its pod template (a workload judged when no pod runs); its
    # deletion feeds no node's facts, so the watch re-sync removes it without listing again.
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "one-off", "namespace": "team-alpha", "resourceVersion": "1"},
        "spec": {"template": {"spec": {"containers": [{"name": "m", "image": "r.example/m:1"}]}}},
    }
    api.replace_objects([*world(), job])
    cluster = cluster_get_or_create(name="live")
    cluster_sync(cluster=cluster, source=source(api, tmp_path))
    assert ClusterObject.objects.filter(cluster=cluster, kind="workload", name="Job/one-off")
    api.replace_objects(world())
    run = cluster_sync(cluster=cluster, source=source(api, tmp_path))
    assert (run.status, run.mode) == ("succeeded", "watch")
    assert not ClusterObject.objects.filter(cluster=cluster, kind="workload", name="Job/one-off")


def test_a_node_joining_its_pool_with_another_sharing_config_is_drift_in_a_watch(tmp_path):
    """A surge upgrade adds the new node before it removes the old one: the watch touches only
    the new node, and it is still compared with the pool's earlier nodes (DRIFT-001)."""
    objects = world()
    config = item(objects, "ConfigMap", "time-slicing-config")["data"]
    config["ts-8"] = config["ts-4"].replace("replicas: 4", "replicas: 8")
    old = item(objects, "Node", "gpu-ts-1")
    old["metadata"]["labels"]["cloud.google.com/gke-nodepool"] = "gpu-a"
    with FakeKubeAPI(objects) as api:
        cluster = cluster_get_or_create(name="live")
        assert cluster_sync(cluster=cluster, source=source(api, tmp_path)).mode == "full"
        new = copy.deepcopy(old)
        new["metadata"].update(name="gpu-ts-2", uid="uid--gpu-ts-2")
        new["metadata"]["labels"].update(
            {
                "kubernetes.io/hostname": "gpu-ts-2",
                "nvidia.com/device-plugin.config": "ts-8",
                "nvidia.com/gpu.replicas": "8",
            }
        )
        api.replace_objects([*copy.deepcopy(objects), new])
        run = cluster_sync(cluster=cluster, source=source(api, tmp_path))
    assert run.mode == "watch"
    event = DriftEvent.objects.get(cluster=cluster, check_id="DRIFT-001")
    assert event.subject_name == "gpu-ts-2"
    # The config in force on the pool's earlier nodes, as the sync resolved it.
    assert event.before["device_plugin_config"] == "gpu-operator/time-slicing-config:ts-4"


def test_an_istio_policy_change_reads_every_route_again(tmp_path, small_world):
    # A VirtualService's authentication is read from Istio's policies with it: an
    # AuthorizationPolicy added later changes what the stored route says.
    route = {
        "apiVersion": "networking.istio.io/v1beta1",
        "kind": "VirtualService",
        "metadata": {"name": "nb", "namespace": "team-a"},
        "spec": {
            "gateways": ["istio-system/public"],
            "http": [{"route": [{"destination": {"host": "nb"}}]}],
        },
    }
    policy = {
        "apiVersion": "security.istio.io/v1beta1",
        "kind": "AuthorizationPolicy",
        "metadata": {"name": "oauth2", "namespace": "istio-system"},
        "spec": {
            "selector": {"matchLabels": {"istio": "ingressgateway"}},
            "action": "CUSTOM",
            "provider": {"name": "oauth2-proxy"},
            "rules": [{}],
        },
    }
    with FakeKubeAPI([*world(), route]) as server:
        cluster = cluster_get_or_create(name="istio")
        assert cluster_sync(cluster=cluster, source=source(server, tmp_path)).mode == "full"
        server.replace_objects([*world(), route, policy])
        run = cluster_sync(cluster=cluster, source=source(server, tmp_path))
    assert (run.status, run.mode) == ("succeeded", "full")
    (stored,) = cluster_snapshot(cluster).ingresses
    assert stored.auth.startswith("AuthorizationPolicy istio-system/oauth2: CUSTOM")


def test_an_istio_sidecar_that_stops_limiting_egress_is_dropped(tmp_path, small_world):
    sidecar = {
        "apiVersion": "networking.istio.io/v1beta1",
        "kind": "Sidecar",
        "metadata": {"name": "default", "namespace": "team-a"},
        "spec": {"outboundTrafficPolicy": {"mode": "REGISTRY_ONLY"}},
    }
    with FakeKubeAPI([*world(), sidecar]) as server:
        cluster = cluster_get_or_create(name="istio-sidecar")
        cluster_sync(cluster=cluster, source=source(server, tmp_path))
        assert [p.engine for p in cluster_snapshot(cluster).network_policies] == [
            "networking.istio.io/Sidecar"
        ]
        opened = copy.deepcopy(sidecar)
        opened["spec"]["outboundTrafficPolicy"]["mode"] = "ALLOW_ANY"
        server.replace_objects([*world(), opened])
        run = cluster_sync(cluster=cluster, source=source(server, tmp_path))
    assert run.status == "succeeded"
    assert [p.engine for p in cluster_snapshot(cluster).network_policies] == []
