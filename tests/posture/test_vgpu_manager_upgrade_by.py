"""How a vm-vgpu node's driver (NVIDIA's vGPU Manager) is upgraded: where the GPU Operator's
ClusterPolicy deploys it (`vgpuManager`), through the Operator, by `vgpuManager.version`, never
by `driver.version` nor as "a DaemonSet the GPU Operator does not manage" (the DaemonSet is the
ClusterPolicy's own operand)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inventory.services import cluster_sync_from_snapshot
from inventory.sync import cluster_get_or_create
from posture.services import posture_evaluate
from tenants.services import tenants_apply
from tenants.spec import parse_tenants_document
from tests.posture.test_actions_closed_range import LATER, TYPO, import_own, vgpu_host_items
from tests.posture.test_actions_real_world import open_finding

pytestmark = pytest.mark.django_db


def cluster_policy(vgpu_manager: dict) -> dict:
    spec = {
        "driver": {"enabled": True, "version": "570.195.03"},
        "sandboxWorkloads": {"enabled": True, "defaultWorkload": "container"},
        "vgpuManager": vgpu_manager,
    }
    meta = {"name": "cluster-policy", "uid": "uid-cp"}
    return {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": meta, "spec": spec}


def operator_pod() -> dict:
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "gpu-operator-6d9c8"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "gpu-operator-6d9c8-x2x9q",
            "namespace": "gpu-operator",
            "ownerReferences": [{**owner, "controller": True}],
        },
        "spec": {
            "nodeName": "kvm-1",
            "containers": [
                {"name": "gpu-operator", "image": "nvcr.io/nvidia/gpu-operator:v25.3.2"}
            ],
        },
        "status": {"phase": "Running"},
    }


def synced(tmp_path: Path, vgpu_manager: dict) -> dict:
    document_ = {"tenants": [{"slug": "vdi", "name": "VDI", "trust_class": "internal",
                              "namespaces": ["vdi-desktops"]}]}  # fmt: skip
    tenants_apply(specs=parse_tenants_document(document_))
    items = [*vgpu_host_items(), cluster_policy(vgpu_manager), operator_pod()]
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    cluster_sync_from_snapshot(cluster=cluster_get_or_create(name="vlab"), paths=[path])
    import_own(TYPO, LATER)
    posture_evaluate()
    return open_finding("STACK-001", "kvm-1").evidence["upgrade_by"]


def test_the_operators_vgpu_manager_is_upgraded_through_the_operator(tmp_path):
    upgrade_by = synced(tmp_path, {"enabled": True, "version": "535.261.04"})
    assert upgrade_by["managed_by"] == "gpu_operator"
    assert "vgpuManager.version" in upgrade_by["how"]
    assert "does not manage" not in upgrade_by["how"]
    # driver.version (570.195.03) is not the vGPU Manager's: no rollout of it is claimed.
    assert upgrade_by.get("desired_version") in (None, "")


def test_a_vgpu_manager_the_cluster_policy_turns_off_is_its_own_deployment(tmp_path):
    upgrade_by = synced(tmp_path, {"enabled": False})
    assert upgrade_by["managed_by"] == "own_deployment"
    assert "spec.vgpuManager.enabled is false" in upgrade_by["why"]
