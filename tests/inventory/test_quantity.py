"""GPU quantities in the canonical form the API server returns them (HAMi's 3000 MiB is "3k")."""

from __future__ import annotations

from decimal import Decimal

import pytest

import posture.rules  # noqa: F401  (registers the checks)
from inventory.snapshot import Container, ResourceQuota
from inventory.snapshot.quantity import count_problem, gpu_count, parse_quantity
from inventory.sources.normalise import normalise
from posture.rules.pod.visible_devices import allocated_gpus
from tests.inventory.normalise_helpers import node as raw_node
from tests.inventory.normalise_helpers import pod as raw_pod
from tests.posture.builders import gpu_node, inputs, pod, run, sliced_node, tenant

TEAM = tenant("team", namespaces=("team-a",))


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1", 1),
        (" 01", 1),
        ("3k", 3000),
        ("1000m", 1),
        ("2Ki", 2048),
        ("1e3", 1000),
        ("1E", 10**18),
        ("0.5", Decimal("0.5")),
        ("abc", None),
        ("1kk", None),
        ("", None),
    ],
)
def test_parse_quantity(text, value):
    assert parse_quantity(text) == value


def test_a_canonical_hami_memory_quantity_is_held():
    box = Container("main", "img", gpu_limits={"nvidia.com/gpu": "1", "nvidia.com/gpumem": "3k"})
    held = pod("team-a", containers=(box,)).gpu_resources
    assert held == {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 3000}


def test_k8s001_asks_a_quota_for_hami_memory_read_back_as_3k():
    # Memory asked without a share (a share's bounded count would bound it, quota.py).
    box = Container("main", "img", gpu_limits={"nvidia.com/gpumem": "3k"})
    quota = ResourceQuota("team-a", "gpu", hard={"requests.nvidia.com/gpu": "4"})
    world = inputs(
        nodes=(gpu_node(),),
        pods=(pod("team-a", containers=(box,)),),
        tenants=(TEAM,),
        quotas=(quota,),
    )
    (draft,) = run("K8S-001", world)
    assert [m["resource"] for m in draft.evidence["missing"]] == ["nvidia.com/gpumem"]


@pytest.mark.parametrize(("request_", "fires"), [("1000m", False), ("1", False), ("2", True)])
def test_pod006_compares_quantities_not_text(request_, fires):
    box = Container(
        "main", "img", gpu_requests={"nvidia.com/gpu": request_}, gpu_limits={"nvidia.com/gpu": "1"}
    )
    world = inputs(nodes=(gpu_node(),), pods=(pod("team-a", containers=(box,)),), tenants=(TEAM,))
    assert bool(run("POD-006", world)) is fires


# --- one parser for every GPU count, and a sync that says where a count is not what was written


@pytest.mark.parametrize(
    ("value", "count", "problem"),
    [
        ("8", 8, None),
        (8, 8, None),
        (1e3, 1000, None),
        ("1k", 1000, None),
        ("2Ki", 2048, None),
        ("1e3", 1000, None),
        ("1000m", 1, None),
        ("0", 0, None),
        ("500m", 1, "a fraction"),
        ("lots", 1, "not a Kubernetes quantity"),
        (True, 1, "not a Kubernetes quantity"),
        ("-1", 0, "negative"),
    ],
)
def test_a_gpu_count_fails_closed_and_says_when_it_is_no_whole_count(value, count, problem):
    assert (gpu_count(value), count_problem(value)) == (count, problem)


def _node_and_pod(capacity: object, limit: object) -> list[dict]:
    box = {"name": "main", "image": "img", "resources": {"limits": {"nvidia.com/gpu": limit}}}
    return [
        raw_node("gpu-1", capacity={"cpu": "8", "nvidia.com/gpu": capacity}),
        raw_pod("team-a", "trainer", box, node_name="gpu-1"),
    ]


@pytest.mark.parametrize("capacity", ["1k", 1000, "1e3", "1000"])
def test_a_node_listing_1k_gpus_is_a_gpu_node_of_1000(capacity):
    snapshot = normalise(_node_and_pod(capacity, "1"))
    (node,) = snapshot.nodes
    assert node.is_gpu_node
    assert node.gpu_capacity == {"nvidia.com/gpu": 1000}
    assert node.gpu_signs is None or not any("no GPU" in s for s in node.gpu_signs)
    assert not [w for w in snapshot.warnings if "gpu-1" in w]


def test_an_amd_node_listing_1k_gpus_counts_them():
    snapshot = normalise([raw_node("mi-1", capacity={"amd.com/gpu": "1k"})])
    assert snapshot.nodes[0].accelerator_resources == {"amd.com/gpu": 1000}


@pytest.mark.parametrize(
    ("limit", "problem"),
    [("500m", "a fraction"), ("lots", "not a Kubernetes quantity"), (0.5, "a fraction")],
)
def test_a_pod_gpu_that_is_no_whole_count_is_held_and_warned(limit, problem):
    snapshot = normalise(_node_and_pod("8", limit))
    (trainer,) = snapshot.pods
    assert trainer.gpu_resources == {"nvidia.com/gpu": 1}  # fails closed: it holds a GPU
    (warning,) = [w for w in snapshot.warnings if "trainer" in w]
    assert "Pod team-a/trainer" in warning and "main" in warning
    assert f"nvidia.com/gpu={limit}" in warning and problem in warning
    assert "counted as holding 1" in warning


def test_a_node_gpu_capacity_that_is_no_quantity_is_warned():
    snapshot = normalise([raw_node("gpu-1", capacity={"nvidia.com/gpu": "lots"})])
    (warning,) = snapshot.warnings
    assert warning.startswith("Node gpu-1 capacity nvidia.com/gpu=lots")
    assert "not a Kubernetes quantity" in warning


def test_whole_counts_are_not_warned():
    snapshot = normalise(_node_and_pod("8", "2"))
    assert not [w for w in snapshot.warnings if "quantity" in w or "fraction" in w]


@pytest.mark.parametrize("limit", ["500m", "lots"])
def test_share001_sees_a_tenant_whose_gpu_limit_is_no_whole_count(limit):
    # Fails closed: a hand-edited "500m" or "lots" still holds the time-sliced GPU.
    beta = Container("main", "img", gpu_limits={"nvidia.com/gpu": limit})
    world = inputs(
        nodes=(sliced_node(gpus=1, replicas=4),),
        pods=(pod("alpha", "a", gpu={"nvidia.com/gpu": 1}), pod("beta", "b", containers=(beta,))),
        tenants=(tenant("alpha"), tenant("beta")),
    )
    (pair,) = run("SHARE-001", world)
    assert pair.tenants == ("alpha", "beta")


def test_pod011_counts_1k_gpus_asked_as_1000():
    box = Container("main", "img", gpu_limits={"nvidia.com/gpu": "1k"})
    assert allocated_gpus(box, gpu_node()) == 1000
