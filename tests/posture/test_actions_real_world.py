"""Fix-first actions on worlds synced, imported (the real NVIDIA CSAF bulletins) and scored
through the real path: each action closes exactly what one change closes, and its numbers are
the scores' own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inventory.bulletins.store import bulletins_import_paths
from inventory.services import cluster_sync_from_snapshot
from inventory.sync import cluster_get_or_create
from posture.models import Action, Finding
from posture.services import posture_evaluate
from tenants.services import tenants_apply
from tenants.spec import parse_tenants_document
from tests.realworld import realworld

pytestmark = pytest.mark.django_db

TENANTS = {
    "tenants": [
        {"slug": "alpha", "name": "Alpha", "trust_class": "internal", "namespaces": ["team-a"]},
        {"slug": "beta", "name": "Beta", "trust_class": "external", "namespaces": ["beta-prod"]},
    ]
}


def gpu_node(name: str, pool: str | None, driver: str = "550.90.07") -> dict:
    labels = {
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
        "nvidia.com/gpu.count": "1",
        "nvidia.com/cuda.driver-version.full": driver,
        "kubernetes.io/hostname": name,
    }
    if pool:
        labels["gpuposture.io/pool"] = pool
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "uid": f"uid-{name}", "labels": labels},
        "spec": {},
        "status": {"capacity": {"nvidia.com/gpu": "1"}, "allocatable": {"nvidia.com/gpu": "1"}},
    }


def pod(
    namespace: str,
    name: str,
    node: str,
    image: str,
    *,
    gpu: bool = True,
    owner: str | None = None,
    privileged: bool = False,
) -> dict:
    container: dict = {"name": "main", "image": image, "resources": {}}
    if gpu:
        container["resources"] = {
            "limits": {"nvidia.com/gpu": "1"},
            "requests": {"nvidia.com/gpu": "1"},
        }
    if privileged:
        container["securityContext"] = {"privileged": True}
    meta: dict = {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}"}
    if owner:
        meta["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner, "controller": True}
        ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"nodeName": node, "serviceAccountName": "default", "containers": [container]},
        "status": {"phase": "Running"},
    }


def deployment(namespace: str, name: str, replicaset: str) -> list[dict]:
    return [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-dep-{name}"},
            "spec": {"replicas": 2},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": replicaset,
                "namespace": namespace,
                "uid": f"uid-rs-{replicaset}",
                "ownerReferences": [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "Deployment",
                        "name": name,
                        "controller": True,
                    }
                ],
            },
            "spec": {"replicas": 2},
        },
    ]


def namespaces(*names: str) -> list[dict]:
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n, "uid": f"uid-ns-{n}"}}
        for n in names
    ]


def world(tmp_path: Path, items: list[dict], *bulletins: str) -> None:
    """Tenants alpha and beta, the snapshot synced as cluster "rt", the bulletins imported from
    the real NVIDIA CSAF files, and everything scored."""
    tenants_apply(specs=parse_tenants_document(TENANTS))
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    cluster_sync_from_snapshot(cluster=cluster_get_or_create(name="rt"), paths=[path])
    if bulletins:
        files = [str(realworld("csaf", f"nvidia-{n}.json")) for n in bulletins]
        bulletins_import_paths(paths=files)
    posture_evaluate()


def open_finding(check: str, name: str) -> Finding:
    return Finding.objects.get(check_id=check, subject_name=name, status="open")


def action_of(finding: Finding) -> Action:
    (action,) = [a for a in Action.objects.all() if finding.pk in a.finding_ids]
    return action


def test_a_workload_on_two_untainted_pools_is_no_single_pools_taint(tmp_path, personas):
    """POD-009 of a Deployment with a pod on pool pa and one on pool pb: tainting pa leaves
    the pb pod outside its class's pool, so the taint of pa does not close it; the one change
    that does is to the workload (schedule it on its class's pool)."""
    items = [
        gpu_node("gpu-a1", "pa"),
        gpu_node("gpu-b1", "pb"),
        *namespaces("team-a", "beta-prod"),
        *deployment("beta-prod", "infer", "infer-7d9"),
        pod("beta-prod", "infer-7d9-a", "gpu-a1", "docker.io/b/infer:2", owner="infer-7d9"),
        pod("beta-prod", "infer-7d9-b", "gpu-b1", "docker.io/b/infer:2", owner="infer-7d9"),
    ]
    world(tmp_path, items)
    outside = open_finding("POD-009", "infer")
    action = action_of(outside)
    assert not action.title.startswith("Taint pool"), action.title
    assert action.title == "Schedule Deployment beta-prod/infer on its class's tainted pool"
    assert action.finding_ids == [outside.pk]
    # Each pool's own taint still closes its node's K8S-002, and nothing else.
    for node, pool in (("gpu-a1", "pa"), ("gpu-b1", "pb")):
        taint = action_of(open_finding("K8S-002", node))
        assert taint.title.startswith(f"Taint pool {pool}")
        assert taint.check_ids == ["K8S-002"]


def test_a_workload_with_a_pod_on_a_node_in_no_pool_is_no_pools_taint(tmp_path, personas):
    items = [
        gpu_node("gpu-a1", "pa"),
        gpu_node("gpu-x", None),
        *namespaces("team-a", "beta-prod"),
        *deployment("beta-prod", "infer", "infer-7d9"),
        pod("beta-prod", "infer-7d9-a", "gpu-a1", "docker.io/b/infer:2", owner="infer-7d9"),
        pod("beta-prod", "infer-7d9-b", "gpu-x", "docker.io/b/infer:2", owner="infer-7d9"),
    ]
    world(tmp_path, items)
    action = action_of(open_finding("POD-009", "infer"))
    assert action.title == "Schedule Deployment beta-prod/infer on its class's tainted pool"


def test_a_workload_on_one_untainted_pool_is_closed_by_tainting_it(tmp_path, personas):
    items = [
        gpu_node("gpu-a1", "pa"),
        gpu_node("gpu-a2", "pa"),
        *namespaces("team-a", "beta-prod"),
        *deployment("beta-prod", "infer", "infer-7d9"),
        pod("beta-prod", "infer-7d9-a", "gpu-a1", "docker.io/b/infer:2", owner="infer-7d9"),
        pod("beta-prod", "infer-7d9-b", "gpu-a2", "docker.io/b/infer:2", owner="infer-7d9"),
    ]
    world(tmp_path, items)
    outside = open_finding("POD-009", "infer")
    action = action_of(outside)
    assert action.title == "Taint pool pa for class external"
    assert outside.pk in action.finding_ids and "K8S-002" in action.check_ids
