"""DRIFT-002 names the GPU nodes the changed component reaches and affects the tenants there:
a DaemonSet's nodes (its pods, else its placement), a cluster-wide controller's its operand
DaemonSets' nodes. Through sync and score, on the small world (alpha and beta on gpu-ts-1)."""

from __future__ import annotations

import copy
import json

import pytest

from inventory.services import cluster_sync_from_snapshot
from posture.models import Finding
from posture.services import posture_evaluate
from tests.conftest import load_json

PLUGIN = "nvidia-device-plugin-daemonset"


def world(
    plugin_tag: str, operator_tag: str = "v24.9.2", with_pod: bool = True, cdi: bool = True
) -> list:
    """The small world with the device plugin as a DaemonSet object whose pod runs on
    gpu-ts-1 (or, without the pod, a DaemonSet whose nodeSelector admits gpu-ts-1)."""
    image = f"nvcr.io/nvidia/k8s-device-plugin:{plugin_tag}"
    objects = copy.deepcopy(load_json("small-cluster.json")["items"])
    kept = []
    for obj in objects:
        name = obj["metadata"]["name"]
        if obj["kind"] == "Pod" and name.startswith(PLUGIN):
            if not with_pod:
                continue
            obj["metadata"]["ownerReferences"] = [
                {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": PLUGIN, "uid": "ds-1"}
            ]
            obj["spec"]["containers"][0]["image"] = image
        if obj["kind"] == "Deployment" and name == "gpu-operator":
            obj["spec"]["template"]["spec"]["containers"][0]["image"] = (
                f"nvcr.io/nvidia/gpu-operator:{operator_tag}"
            )
        kept.append(obj)
    kept.append(
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": PLUGIN, "namespace": "gpu-operator", "uid": "ds-1"},
            "spec": {
                "selector": {"matchLabels": {"app": PLUGIN}},
                "template": {
                    "metadata": {"labels": {"app": PLUGIN}},
                    "spec": {
                        "nodeSelector": {"nvidia.com/gpu.count": "1"},
                        "containers": [{"name": "main", "image": image}],
                    },
                },
            },
        }
    )
    kept.append(
        {
            "apiVersion": "nvidia.com/v1",
            "kind": "ClusterPolicy",
            "metadata": {"name": "cluster-policy", "uid": "cp-1"},
            "spec": {"cdi": {"enabled": cdi}, "devicePlugin": {"version": plugin_tag}},
        }
    )
    return kept


def sync(cluster, tmp_path, objects, name):
    path = tmp_path / name
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    cluster_sync_from_snapshot(cluster=cluster, paths=[path])
    posture_evaluate()


def changed(kind: str, name: str) -> Finding:
    (finding,) = Finding.objects.filter(
        check_id="DRIFT-002",
        status="open",
        subject_kind=kind,
        subject_name=name,
        title__contains="pod spec changed",
    )
    return finding


@pytest.mark.django_db
def test_changed_device_plugin_names_its_node_and_affects_the_tenants_there(small_world, tmp_path):
    sync(small_world, tmp_path, world("v0.16.2"), "v1.json")
    sync(small_world, tmp_path, world("v0.17.0"), "v2.json")
    finding = changed("DaemonSet", PLUGIN)
    assert finding.evidence["nodes_affected"] == ["gpu-ts-1"]
    assert set(finding.tenants.values_list("slug", flat=True)) == {"alpha", "beta"}
    assert "runs a pod on" in finding.evidence["nodes_basis"]


@pytest.mark.django_db
def test_a_daemonset_with_no_pod_in_the_snapshot_reaches_the_gpu_nodes_it_selects(
    small_world, tmp_path
):
    sync(small_world, tmp_path, world("v0.16.2", with_pod=False), "v1.json")
    sync(small_world, tmp_path, world("v0.17.0", with_pod=False), "v2.json")
    finding = changed("DaemonSet", PLUGIN)
    assert finding.evidence["nodes_affected"] == ["gpu-ts-1"]  # not cpu-1: no GPU there
    assert "nodeSelector" in finding.evidence["nodes_basis"]
    assert set(finding.tenants.values_list("slug", flat=True)) == {"alpha", "beta"}


@pytest.mark.django_db
def test_upgraded_gpu_operator_reaches_the_nodes_of_its_operands(small_world, tmp_path):
    sync(small_world, tmp_path, world("v0.17.0"), "v1.json")
    sync(small_world, tmp_path, world("v0.17.0", operator_tag="v25.3.0"), "v2.json")
    finding = changed("Deployment", "gpu-operator")
    assert finding.evidence["nodes_affected"] == ["gpu-ts-1"]
    assert "cluster-wide controller" in finding.evidence["nodes_basis"]
    assert PLUGIN in finding.evidence["nodes_basis"]
    assert set(finding.tenants.values_list("slug", flat=True)) == {"alpha", "beta"}


@pytest.mark.django_db
def test_changed_cluster_policy_reaches_the_nodes_of_the_operators_operands(small_world, tmp_path):
    sync(small_world, tmp_path, world("v0.17.0"), "v1.json")
    sync(small_world, tmp_path, world("v0.17.0", cdi=False), "v2.json")
    (finding,) = Finding.objects.filter(
        check_id="DRIFT-002",
        status="open",
        subject_kind="ClusterPolicy",
        title__endswith=": cdi_enabled",
    )
    assert finding.evidence["nodes_affected"] == ["gpu-ts-1"]
    assert "configures the GPU Operator" in finding.evidence["nodes_basis"]
    assert set(finding.tenants.values_list("slug", flat=True)) == {"alpha", "beta"}
