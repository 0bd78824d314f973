"""AMD's device plugin under its `mixed` resource naming strategy advertises partitioned GPUs by
partition mode (amd.com/cpx_nps4) rather than amd.com/gpu: a pod asking for one holds an AMD
GPU partition, which LEAK-002 must see beside another tenant's pod reaching every GPU."""

from __future__ import annotations

from typing import Any

from inventory.sources.normalise import normalise
from tests.posture.builders import tenant
from tests.posture.gpu_access_world import container, namespace, pod, run, world

ALPHA, BETA = tenant("alpha", "internal_trusted"), tenant("beta", "internal_trusted")


def amd_node(capacity: dict[str, str]) -> dict[str, Any]:
    labels = {"kubernetes.io/hostname": "mi300-a", "amd.com/gpu.family": "AI"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "mi300-a", "labels": labels},
        "status": {"capacity": {"cpu": "96", **capacity}, "allocatable": capacity},
    }


def _objects(resource: str) -> list[dict[str, Any]]:
    privileged = container("debug", securityContext={"privileged": True})
    return [
        namespace("alpha"),
        namespace("beta"),
        amd_node({resource: "64"}),
        pod("alpha", "train-0", container(gpu={resource: "1"}), node_name="mi300-a"),
        pod("beta", "debug-0", privileged, node_name="mi300-a"),
    ]


def test_a_tenant_on_an_amd_partition_beside_a_privileged_pod_shares_its_gpus():
    (leak,) = run("LEAK-002", world(_objects("amd.com/cpx_nps4"), (ALPHA, BETA)))
    assert leak.tenants == ("alpha", "beta")
    how = {t["tenant"]: t["reaches_gpus_by"] for t in leak.evidence["tenants_on_node"]}
    assert how["alpha"] == "pod alpha/train-0 holds amd.com/cpx_nps4=1"


def test_partition_mode_resources_are_named_among_the_accelerators_not_judged():
    snapshot = normalise(_objects("amd.com/cpx_nps4"))
    assert any("amd.com/cpx_nps4" in w for w in snapshot.warnings)
