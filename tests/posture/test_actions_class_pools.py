"""On bare metal no provider names a node pool: a node fix (STACK-006, STACK-008...) is then
one action per trust-class pool (the class taint or label, DESIGN §3), not one per node."""

from __future__ import annotations

from pathlib import Path

import pytest

from inventory.pools import fix_pool, node_pool
from posture.actions import NODE_FIXES
from posture.models import Finding
from tenants.pool_taints import PoolTaintRules
from tests.posture.test_actions_real_world import action_of, gpu_node, namespaces, pod, world

CLASS_KEY = "gpuposture.io/trust-class"
CDI = NODE_FIXES["STACK-006"]


def bare_metal_node(name: str, trust_class: str | None, *, label_only: bool = False) -> dict:
    node = gpu_node(name, None)
    if trust_class:
        node["metadata"]["labels"][CLASS_KEY] = trust_class
        if not label_only:
            taint = {"key": CLASS_KEY, "value": trust_class, "effect": "NoSchedule"}
            node["spec"]["taints"] = [taint]
    return node


def test_the_fix_pool_is_the_provider_pool_then_the_class_taint_then_its_label():
    rules = PoolTaintRules(keys=(CLASS_KEY,))
    tainted = [(CLASS_KEY, "internal", "NoSchedule"), ("nvidia.com/gpu", "present", "NoSchedule")]
    assert fix_pool({"gpuposture.io/pool": "h100-a"}, tainted, rules) == "h100-a"
    assert fix_pool({}, tainted, rules) == "internal"
    assert fix_pool({CLASS_KEY: "sensitive"}, [], rules) == "sensitive"
    two = [(CLASS_KEY, "external", "NoSchedule"), ("tier", "x", "NoSchedule")]
    exact = PoolTaintRules(keys=(CLASS_KEY,), exact={"sensitive": ("tier=x:NoSchedule",)})
    assert fix_pool({}, two, exact) == "external+sensitive"
    # A PreferNoSchedule taint and unrelated labels name no pool: the node stands alone.
    assert fix_pool({"pool": "a"}, [(CLASS_KEY, "internal", "PreferNoSchedule")], rules) == ""
    # A sharing approval's pool is still only a provider's (node_pool is unchanged).
    assert node_pool({CLASS_KEY: "internal"}) == ""


@pytest.mark.django_db
def test_a_node_fix_on_a_bare_metal_class_pool_is_one_action(tmp_path: Path, personas):
    items = [
        bare_metal_node("h100-001", "internal"),
        bare_metal_node("h100-002", "internal"),
        bare_metal_node("h100-003", "internal", label_only=True),
        bare_metal_node("h100-004", "external"),
        bare_metal_node("h100-005", None),
        *namespaces("team-a", "beta-prod"),
    ]
    items += [
        pod("team-a", f"train-{i}", f"h100-00{i}", "nvcr.io/nvidia/pytorch:24.05-py3")
        for i in range(1, 6)
    ]
    world(tmp_path, items)
    findings = {f.subject_name: f for f in Finding.objects.filter(check_id="STACK-006")}
    assert set(findings) >= {f"h100-00{i}" for i in range(1, 6)}, set(findings)
    internal = action_of(findings["h100-001"])
    assert internal.title == f"{CDI} on pool internal"
    assert {findings[n].pk for n in ("h100-001", "h100-002", "h100-003")} <= set(
        internal.finding_ids
    )
    assert action_of(findings["h100-004"]).title == f"{CDI} on pool external"
    assert action_of(findings["h100-005"]).title == f"{CDI} on node h100-005"
