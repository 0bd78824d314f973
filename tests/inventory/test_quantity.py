"""GPU quantities in the canonical form the API server returns them (HAMi's 3000 MiB is "3k")."""

from __future__ import annotations

from decimal import Decimal

import pytest

import posture.rules  # noqa: F401  (registers the checks)
from inventory.snapshot import Container, ResourceQuota
from inventory.snapshot.quantity import parse_quantity
from tests.posture.builders import gpu_node, inputs, pod, run, tenant

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
