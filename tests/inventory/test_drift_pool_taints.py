"""A node that joins a class pool without the class taint its earlier nodes all had (an
autoscaler's replacement from a template that lost it) is DRIFT-003: K8S-002 says the node is
untainted, this dates the change."""

from __future__ import annotations

import copy
import json
from io import StringIO

import pytest
from django.core.management import call_command

from inventory import snapshot as snap
from inventory.drift import ClusterState, detect_drift
from posture.models import Finding
from posture.services import posture_evaluate
from tenants.pool_taints import PoolTaintRules
from tests.conftest import load_json

INTERNAL = snap.Taint("gpuposture.io/trust-class", "internal", "NoSchedule")
REGULATED = snap.Taint("dedicated", "regulated", "NoSchedule")  # a class's exact taint
BATCH = snap.Taint("dedicated", "batch", "NoSchedule")  # keeps pods off, names no class
CORDON = snap.Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")


def node(name: str, *taints: snap.Taint, pool: str = "pool-a", gpus: int = 4) -> snap.Node:
    return snap.Node(
        name=name,
        gpu_count=gpus,
        gpu_model="NVIDIA-L40S",
        labels={"gpuposture.io/pool": pool},
        taints=taints,
        sharing_strategy="time_slicing",
        time_slicing_replicas=4,
        device_plugin_config="ts-4",
    )


RULES = PoolTaintRules(exact={"regulated": ("dedicated=regulated:NoSchedule",)})


def drift(before: tuple[snap.Node, ...], after: tuple[snap.Node, ...]) -> list:
    return detect_drift(ClusterState(nodes=before), ClusterState(nodes=after), RULES)


def test_a_replacement_without_the_pools_class_taint_is_drift_003():
    [change] = drift((node("gpu-1", INTERNAL),), (node("gpu-2"),))
    assert (change.check_id, change.subject_kind, change.subject_name) == (
        "DRIFT-003",
        "Node",
        "gpu-2",
    )
    assert change.summary == (
        "GPU node gpu-2 joined node pool pool-a without the taint "
        "gpuposture.io/trust-class=internal:NoSchedule its earlier nodes had"
    )
    assert change.before == {
        "node_pool": "pool-a",
        "taints": ["gpuposture.io/trust-class=internal:NoSchedule"],
    }
    assert change.after == {"node_pool": "pool-a", "taints": []}


def test_a_class_exact_taint_counts_and_another_class_value_is_a_missing_taint():
    [change] = drift((node("gpu-1", REGULATED),), (node("gpu-2", BATCH),))
    assert "without the taint dedicated=regulated:NoSchedule" in change.summary
    external = snap.Taint("gpuposture.io/trust-class", "external", "NoSchedule")
    [change] = drift((node("gpu-1", INTERNAL),), (node("gpu-2", external),))
    assert change.after["taints"] == ["gpuposture.io/trust-class=external:NoSchedule"]


@pytest.mark.parametrize(
    "before, after",
    [
        ((node("gpu-1", INTERNAL),), (node("gpu-2", INTERNAL),)),  # replaced alike
        ((node("gpu-1", INTERNAL),), (node("gpu-2", INTERNAL, CORDON),)),  # and cordoned
        ((node("gpu-1", INTERNAL), node("gpu-3")), (node("gpu-2"),)),  # the pool disagreed
        ((node("gpu-1", BATCH),), (node("gpu-2"),)),  # no class taint: K8S-002's, not drift
        ((node("gpu-1", INTERNAL),), (node("gpu-2", pool="pool-b"),)),  # another pool
        ((node("gpu-1", INTERNAL),), (node("cpu-2", gpus=0),)),  # no GPU node
        ((node("gpu-1"),), (node("gpu-2", INTERNAL),)),  # stricter, not weaker
    ],
    ids=["alike", "cordoned", "mixed-pool", "no-class", "other-pool", "cpu", "gained"],
)
def test_no_drift_003_where_the_pool_had_no_agreed_class_taint_lost(before, after):
    assert [c for c in drift(before, after) if c.check_id == "DRIFT-003"] == []


def _world(node_name: str, taints: list[dict]) -> dict:
    world = copy.deepcopy(load_json("small-cluster.json"))
    assert isinstance(world, dict)
    for item in world["items"]:
        if item["kind"] == "Node" and item["metadata"]["name"] == "gpu-ts-1":
            item["metadata"]["name"] = node_name
            item["metadata"]["labels"]["gpuposture.io/pool"] = "pool-a"
            item["metadata"]["labels"]["kubernetes.io/hostname"] = node_name
            item["spec"] = {"taints": taints}
        elif item["kind"] == "Pod" and item["spec"].get("nodeName") == "gpu-ts-1":
            item["spec"]["nodeName"] = node_name
    return world


@pytest.mark.django_db
def test_the_autoscaler_replacing_a_class_pool_node_untainted_opens_drift_003(
    small_world, tmp_path
):
    taint = [{"key": "gpuposture.io/trust-class", "value": "internal", "effect": "NoSchedule"}]
    for name, taints in (("gpu-ts-1", taint), ("gpu-ts-2", [])):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(_world(name, taints)))
        call_command("sync_cluster", "--cluster", "lab", "--snapshot", str(path), stdout=StringIO())
    posture_evaluate()
    # (gpu-ts-1's own DRIFT-003 is its first sync here giving it the pool label and taint.)
    found = Finding.objects.filter(cluster=small_world, check_id="DRIFT-003", status="open")
    [finding] = [f for f in found if f.subject_name == "gpu-ts-2"]
    assert finding.subject_kind == "Node"
    assert "joined node pool pool-a without the taint" in json.dumps(finding.evidence)
    assert finding.evidence["before"]["taints"] == ["gpuposture.io/trust-class=internal:NoSchedule"]
