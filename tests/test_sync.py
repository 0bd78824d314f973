"""Sync a real-shaped snapshot end to end: idempotence, atomic failure, resolution."""

from __future__ import annotations

import json

import pytest

from inventory.models import ClusterObject, Node, Pod, SyncRun
from inventory.services import cluster_sync_from_snapshot
from inventory.sync import SyncError
from posture.models import Finding, TenantScore
from posture.services import posture_evaluate
from tests.conftest import load_json, world_snapshot_path

pytestmark = pytest.mark.django_db


def inventory_state(cluster):
    return (
        sorted(Node.objects.filter(cluster=cluster).values_list("name", "driver_version", "data")),
        sorted(Pod.objects.filter(cluster=cluster).values_list("namespace", "name", "tenant_id")),
        sorted(
            ClusterObject.objects.filter(cluster=cluster).values_list("kind", "namespace", "name")
        ),
    )


def test_node_facts_come_from_the_snapshot(small_world):
    node = Node.objects.get(cluster=small_world, name="gpu-ts-1")
    assert node.gpu_model == "NVIDIA-H100-80GB-HBM3"
    assert node.gpu_count == 1  # from nvidia.com/gpu.count, not the 4 time-sliced replicas
    assert node.driver_version == "550.90.07"
    assert node.device_plugin_version == "0.17.0"
    assert node.container_toolkit_version == ""  # pinned by digest only: unknown, not guessed
    assert node.gpu_operator_version == "24.9.2"
    assert node.sharing_strategy == "time_slicing"
    assert node.time_slicing_replicas == 4
    cpu = Node.objects.get(cluster=small_world, name="cpu-1")
    assert not cpu.is_gpu_node and cpu.gpu_count is None


def test_pods_map_to_tenants_by_registry_and_label(small_world):
    tenants = dict(Pod.objects.values_list("name", "tenant__slug"))
    assert tenants["trainer-0"] == "alpha"  # namespace listed on the tenant
    assert tenants["inference-0"] == "beta"  # namespace label gpuposture.io/tenant
    assert tenants["nvidia-device-plugin-daemonset-x1"] is None  # platform pod


def test_only_gpu_configmaps_are_kept(small_world):
    kept = set(ClusterObject.objects.filter(kind="configmap").values_list("name", flat=True))
    assert kept == {"time-slicing-config"}  # app-settings may hold anything: never stored


def test_second_sync_and_score_change_nothing(small_world):
    before = inventory_state(small_world)
    findings_before = sorted(Finding.objects.values_list("pk", "fingerprint", "status"))
    run = cluster_sync_from_snapshot(cluster=small_world, paths=[world_snapshot_path()])
    posture_evaluate()
    assert run.status == SyncRun.Status.SUCCEEDED
    changes = dict(run.changes)
    assert changes.pop("drift_events") == 0
    assert run.files_read == 1  # for its summary: "read ... from 1 file"
    assert all(c == {"created": 0, "updated": 0, "deleted": 0} for c in changes.values())
    assert inventory_state(small_world) == before
    assert sorted(Finding.objects.values_list("pk", "fingerprint", "status")) == findings_before
    assert TenantScore.objects.filter(tenant__slug="alpha").count() == 2  # one per run: a trend


@pytest.mark.parametrize(
    "content, message",
    [
        ("{not json", "not valid JSON"),
        (json.dumps({"kind": "List", "items": [{"kind": "Node", "spec": {}}]}), "metadata"),
        (json.dumps({"kind": "List", "items": ["a string"]}), "items[0]"),
    ],
)
def test_broken_snapshot_keeps_the_last_good_state(small_world, tmp_path, content, message):
    before = inventory_state(small_world)
    live_before = Finding.objects.filter(status="open").count()
    broken = tmp_path / "broken.json"
    broken.write_text(content)
    with pytest.raises(SyncError):
        cluster_sync_from_snapshot(cluster=small_world, paths=[broken])
    run = SyncRun.objects.filter(cluster=small_world).order_by("-pk").first()
    assert run.status == SyncRun.Status.FAILED
    assert message.lower() in run.error.lower()
    assert run.finished_at is not None
    assert inventory_state(small_world) == before
    posture_evaluate()
    assert Finding.objects.filter(status="open").count() == live_before


def test_a_failure_while_applying_rolls_everything_back(small_world, monkeypatch):
    from inventory import sync

    before = inventory_state(small_world)
    snapshot = load_json("small-cluster.json")
    for item in snapshot["items"]:
        if item["kind"] == "Node":
            item["metadata"]["labels"]["nvidia.com/cuda.driver-version.full"] = "570.86.15"

    def explode(*args, **kwargs):
        raise RuntimeError("database went away")

    monkeypatch.setattr(sync, "_apply_objects", explode)  # fails after nodes and pods were written
    path = world_snapshot_path().parent / "tmp-changed.json"
    try:
        path.write_text(json.dumps(snapshot))
        with pytest.raises(SyncError):
            cluster_sync_from_snapshot(cluster=small_world, paths=[path])
    finally:
        path.unlink()
    assert inventory_state(small_world) == before
    run = SyncRun.objects.order_by("-pk").first()
    assert run.status == "failed" and "database went away" in run.error


def test_a_fixed_cause_resolves_its_finding(small_world, tmp_path):
    privileged = Finding.objects.get(check_id="POD-001", subject_name="inference-0")
    assert privileged.status == "open"
    snapshot = load_json("small-cluster.json")
    for item in snapshot["items"]:
        if item["kind"] == "Pod" and item["metadata"]["name"] == "inference-0":
            item["spec"]["containers"][0].pop("securityContext")
    path = tmp_path / "fixed.json"
    path.write_text(json.dumps(snapshot))
    cluster_sync_from_snapshot(cluster=small_world, paths=[path])
    posture_evaluate()
    privileged.refresh_from_db()
    assert privileged.status == "resolved" and privileged.resolved_at is not None
    # Reintroduced: the same finding reopens, keeping its first-seen time.
    cluster_sync_from_snapshot(cluster=small_world, paths=[world_snapshot_path()])
    posture_evaluate()
    again = Finding.objects.get(check_id="POD-001", subject_name="inference-0")
    assert again.pk == privileged.pk and again.status == "open"
    assert again.first_seen == privileged.first_seen


def test_a_finding_concerning_two_tenants_is_one_finding_affecting_both(small_world):
    (share,) = Finding.objects.filter(check_id="SHARE-001", status="open")
    assert sorted(share.tenants.values_list("slug", flat=True)) == ["alpha", "beta"]
    assert share.evidence  # names the node and both parties
    assert "beta" in json.dumps(share.evidence) and "alpha" in json.dumps(share.evidence)
    # Each tenant's page and score read it through the relation.
    for slug in ("alpha", "beta"):
        assert Finding.objects.affecting(tenant__slug=slug).filter(pk=share.pk).exists()


def test_score_explains_itself(small_world):
    score = TenantScore.objects.filter(tenant__slug="beta").latest("computed_at")
    assert score.risk == round(sum(c["points"] for c in score.contributions), 2) > 0
    assert score.grade == "F"  # an open critical finding caps the grade
    live = set(
        Finding.objects.filter(tenants__slug="beta", status="open").values_list("pk", flat=True)
    )
    assert {c["finding_id"] for c in score.contributions} == live


def test_replicas_of_a_deployment_read_from_the_cluster_are_one_finding(small_world, tmp_path):
    """The owner index is synced and read back: pods whose ReplicaSet names no template hash
    (so only the ReplicaSet's ownerReference tells) file under their Deployment."""
    snapshot = load_json("small-cluster.json")
    (inference,) = [o for o in snapshot["items"] if o["metadata"]["name"] == "inference-0"]
    owner = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "name": "serve-v2",
        "uid": "u-rs",
        "controller": True,
    }
    for i in range(3):
        replica = json.loads(json.dumps(inference))
        replica["metadata"] |= {"name": f"serve-v2-{i}", "ownerReferences": [owner]}
        snapshot["items"].append(replica)
    snapshot["items"].append(
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": "serve-v2",
                "namespace": "beta-prod",
                "ownerReferences": [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "Deployment",
                        "name": "serve",
                        "controller": True,
                    }
                ],
            },
            "spec": {"replicas": 3},
        }
    )
    path = tmp_path / "deployment.json"
    path.write_text(json.dumps(snapshot))
    cluster_sync_from_snapshot(cluster=small_world, paths=[path])
    posture_evaluate()
    (serve,) = Finding.objects.filter(check_id="POD-001", subject_kind="Deployment", status="open")
    assert (serve.subject_namespace, serve.subject_name, serve.exposure) == (
        "beta-prod",
        "serve",
        3,
    )
    assert serve.evidence["replicas"] == 3 and serve.evidence["resolved_by"] == "owner index"
    # beta's, and also the tenants beside its replicas (POD-001's neighbours).
    assert serve.evidence["tenant"] == "beta"
    tenants = set(serve.tenants.values_list("slug", flat=True))
    assert tenants == {"beta", *serve.evidence.get("neighbours", {})}
