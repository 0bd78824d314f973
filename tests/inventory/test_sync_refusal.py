"""An empty or partial export after good syncs (kubectl on the wrong context, a filter that
matched nothing, `kubectl get pods` alone) fails the sync and keeps the last good state: no
node deleted, no finding resolved, no tenant given a false all-clear."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from inventory.models import Node, Pod, SyncRun
from inventory.sync_refusal import sync_refusal
from posture.models import Finding, TenantScore
from posture.services import posture_evaluate
from tests.conftest import api_client, load_json

EMPTY = {"apiVersion": "v1", "kind": "List", "items": []}


# What shows the small world an export of a running cluster: a pod of kube-system.
DNS = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "coredns-5d78c9869d-abcde", "namespace": "kube-system", "uid": "dns-1"},
    "spec": {"nodeName": "cpu-1", "containers": [{"name": "coredns", "image": "coredns"}]},
    "status": {"phase": "Running"},
}


def _only(*kinds: str) -> dict:
    """The small world and its DNS pod, only objects of `kinds` (all without)."""
    items = [*load_json("small-cluster.json")["items"], DNS]
    kept = [i for i in items if not kinds or i["kind"] in kinds]
    return {"apiVersion": "v1", "kind": "List", "items": kept}


def _one_namespace(namespace: str) -> dict:
    """Nodes and the rest, but the pods of one namespace only (`kubectl get pods -n ...`)."""
    document = _only()
    document["items"] = [
        i
        for i in document["items"]
        if i["kind"] != "Pod" or i["metadata"].get("namespace") == namespace
    ]
    assert any(i["kind"] == "Pod" for i in document["items"])
    return document


@pytest.fixture
def running(small_world, tmp_path):
    """The small world synced again with a kube-system pod: a running cluster's export."""
    path = tmp_path / "good.json"
    path.write_text(json.dumps(_only()))
    call_command("sync_cluster", "--cluster", "lab", "--snapshot", str(path), stdout=StringIO())
    assert Pod.objects.filter(cluster=small_world, namespace="kube-system").exists()
    return small_world


def _state(cluster) -> tuple:
    findings = sorted(Finding.objects.filter(cluster=cluster).values_list("pk", "status"))
    scores = list(TenantScore.objects.values_list("pk", "risk"))
    rows = (
        Node.objects.filter(cluster=cluster).count(),
        Pod.objects.filter(cluster=cluster).count(),
    )
    return findings, scores, rows


def _sync(tmp_path: Path, document: dict) -> str:
    path = tmp_path / "lab.json"
    path.write_text(json.dumps(document))
    with pytest.raises(CommandError) as failed:
        call_command("sync_cluster", "--cluster", "lab", "--snapshot", str(path), stdout=StringIO())
    return str(failed.value)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "document, said",
    [
        (EMPTY, "the snapshot holds no objects at all"),
        (_only("Pod", "Namespace", "ConfigMap"), "no Node object, while the cluster's last good"),
        (_only("Node", "Namespace", "ConfigMap"), "no Pod object, while the cluster's last good"),
        (_one_namespace("team-alpha"), "holds pods but none of the cluster's own"),
    ],
    ids=["empty-list", "no-nodes", "nodes-but-no-pods", "one-namespaces-pods"],
)
def test_an_empty_or_partial_export_fails_and_keeps_the_last_good_state(
    running, personas, tmp_path, document, said
):
    small_world = running
    before = _state(small_world)
    assert ("open" in {status for _pk, status in before[0]}) and before[2] == (2, 6)
    message = _sync(tmp_path, document)
    assert said in message and "the last good state is kept" in message
    assert _state(small_world) == before  # nothing resolved, nothing deleted, no new score

    run = SyncRun.objects.filter(cluster=small_world).latest("started_at", "id")
    assert run.status == "failed" and said in run.error
    body = api_client(personas["security_lead"]).get(f"/api/v1/sync-runs/{run.pk}/").json()
    assert body["status"] == "failed" and said in body["error"]
    client = Client()
    client.force_login(personas["security_lead"])
    page = client.get("/").content.decode()
    assert 'data-stale-cluster="lab"' in page and "the last sync failed" in page


def _openshift(document: dict) -> dict:
    """The document as an OpenShift export: no pod in kube-system, its DNS in openshift-dns."""
    dns = json.loads(json.dumps(DNS))
    dns["metadata"].update(name="dns-default-7x2kq", namespace="openshift-dns")
    items = [dns if i.get("metadata", {}).get("uid") == "dns-1" else i for i in document["items"]]
    return {**document, "items": items}


@pytest.mark.django_db
def test_an_openshift_export_of_some_namespaces_pods_is_refused(small_world, tmp_path):
    # OpenShift runs nothing in kube-system: its own DNS pods show it a running cluster.
    path = tmp_path / "good.json"
    path.write_text(json.dumps(_openshift(_only())))
    call_command("sync_cluster", "--cluster", "lab", "--snapshot", str(path), stdout=StringIO())
    before = _state(small_world)
    message = _sync(tmp_path, _openshift(_one_namespace("team-alpha")))
    assert "holds pods but none of the cluster's own" in message
    assert _state(small_world) == before


@pytest.mark.django_db
def test_a_hand_written_world_without_its_plugin_pod_in_kube_system_is_applied(
    small_world, tmp_path
):
    # A device plugin in kube-system is no sign of a running cluster (inventory.kinds_read):
    # a hand-written world that drops it and keeps its tenants' pods is taken at its word.
    plugin = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "nvidia-device-plugin-abcde", "namespace": "kube-system"},
        "spec": {"nodeName": "gpu-1", "containers": [{"name": "p", "image": "plugin"}]},
        "status": {"phase": "Running"},
    }
    world = load_json("small-cluster.json")
    path = tmp_path / "lab.json"
    path.write_text(json.dumps({**world, "items": [*world["items"], plugin]}))
    call_command("sync_cluster", "--cluster", "lab", "--snapshot", str(path), stdout=StringIO())
    kept = [
        i
        for i in world["items"]
        if i["kind"] != "Pod" or i["metadata"]["namespace"] == "team-alpha"
    ]
    path.write_text(json.dumps({**world, "items": kept}))
    call_command("sync_cluster", "--cluster", "lab", "--snapshot", str(path), stdout=StringIO())
    assert not Pod.objects.filter(cluster=small_world, namespace="kube-system").exists()


@pytest.mark.django_db
def test_the_message_names_the_count_and_how_to_export(running, tmp_path):
    message = _sync(tmp_path, _only("Pod", "Namespace"))
    assert "had 2 nodes" in message and "kubectl get nodes,pods" in message
    message = _sync(tmp_path, _only("Node", "Namespace"))
    assert "had 6 pods" in message and "a running cluster always runs pods" in message


@pytest.mark.django_db
def test_a_hand_written_world_may_lose_all_its_pods(small_world, tmp_path):
    """Without kube-system pods the world is taken at its word (inventory.kinds_read)."""
    path = tmp_path / "lab.json"
    path.write_text(json.dumps(_only("Node", "Namespace", "ConfigMap")))
    call_command("sync_cluster", "--cluster", "lab", "--snapshot", str(path), stdout=StringIO())
    assert not Pod.objects.filter(cluster=small_world).exists()
    posture_evaluate()
    assert Finding.objects.get(check_id="POD-001", subject_name="inference-0").status == "resolved"


@pytest.mark.parametrize(
    "counts, nodes, pods, real, refused",
    [
        ({}, 0, 0, False, "no objects at all"),  # even a first sync: an empty list is no cluster
        ({"Node": 0, "Pod": 0, "Namespace": 0}, 3, 9, True, "no objects at all"),  # a live read
        ({"Namespace": 2}, 0, 0, False, None),  # a first sync of a hand-written world
        ({"Pod": 4, "Namespace": 2}, 3, 9, True, "3 nodes"),
        ({"Pod": 4, "Namespace": 2}, 1, 9, False, "1 node:"),  # no node is never a world
        ({"Node": 1, "Namespace": 2}, 1, 1, True, "1 pod "),
        ({"Node": 1, "Namespace": 2}, 1, 1, False, None),  # a hand-written world's pods all gone
        ({"Node": 0, "Pod": 4, "Namespace": 2}, 3, 9, True, None),  # a live list read no node
        ({"Node": 2, "Pod": 0, "Namespace": 2}, 2, 9, True, None),  # a live list read no pod
        ({"Node": 2, "Namespace": 2}, 2, 0, True, None),  # it had no pods before either
    ],
)
def test_sync_refusal(counts, nodes, pods, real, refused):
    said = sync_refusal(counts, stored_nodes=nodes, stored_pods=pods, real_cluster=real)
    assert (said is None) if refused is None else (refused in said)


@pytest.mark.parametrize(
    "counts, pods, real, refused",
    [
        ({"Node": 2, "Pod": 3}, 9, True, "none of the cluster's own"),  # some namespaces' only
        ({"Node": 2, "Pod": 3}, 9, False, None),  # a hand-written world had none there either
        ({"Node": 2, "Pod": 3}, 0, True, None),  # nothing to lose
    ],
)
def test_sync_refusal_of_some_namespaces_pods(counts, pods, real, refused):
    said = sync_refusal(
        counts, stored_nodes=2, stored_pods=pods, real_cluster=real, exported_plumbing=False
    )
    assert (said is None) if refused is None else (refused in said)
