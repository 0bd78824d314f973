"""A pool's taint action names the change that closes its findings and helps whom it helps: a
node already tainted for two classes loses the other class's taint (tainting it again changes
nothing), and a tenant of another class on the pool is not helped by the taint (NoSchedule
evicts nobody: its pods stay, inside another class's pool), so the action leaves it out of its
tenants and risk removed and says its workloads must leave (posture/action_taints.py)."""

from __future__ import annotations

import pytest

from posture.actions import actions_for
from posture.models import ActionTenant
from posture.rules.registry import CHECKS
from posture.scoring import finding_risk
from tests.posture.test_actions import WEIGHTS, finding
from tests.posture.test_actions_real_world import (
    action_of,
    gpu_node,
    namespaces,
    open_finding,
    pod,
    world,
)

CLASS_KEY = "gpuposture.io/trust-class"
ON_GENERIC = [
    {"tenant": "alpha", "trust_class": "internal"},
    {"tenant": "ext", "trust_class": "external"},
]


def ext_outside(pool: str, node: str):
    return finding(
        "POD-009",
        "Deployment",
        "infer",
        namespace="ext-a",
        tenants={"ext": "external"},
        pools=(pool,),
        evidence={"trust_class": "external", "pods": [{"node": node}]},
    )


def test_a_node_tainted_for_two_classes_is_told_to_lose_the_other_one():
    two = finding(
        "K8S-002",
        "Node",
        "n-two",
        tenants={"ext": "external"},
        pools=("twopool",),
        evidence={
            "tainted_for_classes": ["external", "internal"],
            "tenants_on_node": [{"tenant": "ext", "trust_class": "external"}],
        },
    )
    (action,) = actions_for([two, ext_outside("twopool", "n-two")])
    assert action.title == (
        "Remove the internal taint from node n-two (pool twopool), keeping class external's"
    )


def test_a_pool_with_an_untainted_node_and_a_two_class_node_needs_both_changes():
    untainted = finding("K8S-002", "Node", "n-1", tenants={"ext": "external"}, pools=("p",))
    two = finding(
        "K8S-002",
        "Node",
        "n-2",
        tenants={"ext": "external"},
        pools=("p",),
        evidence={"tainted_for_classes": ["external", "internal"]},
    )
    (action,) = actions_for([untainted, two, ext_outside("p", "n-1")])
    assert action.title == (
        "Taint pool p for class external and remove the internal taint from node n-2"
    )


def test_a_two_class_node_no_tenant_names_a_class_for_keeps_one():
    two = finding(
        "K8S-002",
        "Node",
        "n-two",
        tenants={},
        evidence={"tainted_for_classes": ["external", "internal"]},
    )
    (action,) = actions_for([two])
    assert action.title == (
        "Keep one class's taint on node n-two: tainted for external and internal"
    )


def test_a_tenant_of_another_class_on_the_pool_is_not_helped_by_its_taint():
    nodes = [
        finding(
            "K8S-002",
            "Node",
            f"n-gen-{i}",
            tenants={"alpha": "internal", "ext": "external"},
            pools=("generic",),
            evidence={"tenants_on_node": ON_GENERIC},
        )
        for i in (1, 2)
    ]
    (action,) = actions_for([*nodes, ext_outside("generic", "n-gen-1")])
    assert action.title == (
        "Taint pool generic for class external; tenant alpha (class internal) must move its "
        "GPU workloads off it"
    )
    assert action.tenants == ("ext",)
    # The risk it removes is ext's only: its two nodes' K8S-002 and its POD-009.
    points = finding_risk(severity="high", exposure=1, class_weight=WEIGHTS["external"])
    assert action.risk_removed == pytest.approx(3 * points)
    assert action.tenant_risk == {"ext": pytest.approx(3 * points)}
    # All three findings are still closed by it.
    assert len(action.finding_ids) == 3


def test_tenants_of_the_pool_class_and_the_platform_are_helped():
    on_node = [
        {"tenant": "ext", "trust_class": "external"},
        {"tenant": "ops", "trust_class": "platform"},
    ]
    node = finding(
        "K8S-002",
        "Node",
        "n-1",
        tenants={"ext": "external", "ops": "internal"},
        pools=("p",),
        evidence={"tenants_on_node": on_node},
    )
    (action,) = actions_for([node, ext_outside("p", "n-1")])
    assert action.title == "Taint pool p for class external"
    assert action.tenants == ("ext", "ops")


def test_the_taint_fix_overwrites_a_taint_under_the_same_key():
    for check in ("K8S-002", "POD-009"):
        assert "gpuposture.io/trust-class=<class>:NoSchedule --overwrite" in (
            CHECKS[check].remediation
        ), check


@pytest.mark.django_db
def test_a_synced_pool_taint_action_leaves_out_the_internal_tenant(tmp_path, personas):
    items = [
        gpu_node("gpu-a1", "pa"),
        *namespaces("team-a", "beta-prod"),
        pod("team-a", "train", "gpu-a1", "nvcr.io/nvidia/pytorch:24.05-py3"),
        pod("beta-prod", "infer", "gpu-a1", "docker.io/b/infer:2"),
    ]
    world(tmp_path, items)
    action = action_of(open_finding("K8S-002", "gpu-a1"))
    assert action.title == (
        "Taint pool pa for class external; tenant alpha (class internal) must move its GPU "
        "workloads off it"
    )
    assert open_finding("POD-009", "infer").pk in action.finding_ids
    links = ActionTenant.objects.filter(action=action)
    assert [link.tenant.slug for link in links] == ["beta"]
    assert action.risk_removed == pytest.approx(sum(link.risk for link in links))


@pytest.mark.django_db
def test_a_synced_two_class_node_action_removes_the_other_taint(tmp_path, personas):
    node = gpu_node("gpu-two", "twopool")
    node["spec"]["taints"] = [
        {"key": CLASS_KEY, "value": "internal", "effect": "NoSchedule"},
        {"key": CLASS_KEY, "value": "external", "effect": "NoExecute"},
    ]
    items = [
        node,
        *namespaces("team-a", "beta-prod"),
        pod("beta-prod", "infer", "gpu-two", "docker.io/b/infer:2"),
    ]
    world(tmp_path, items)
    action = action_of(open_finding("K8S-002", "gpu-two"))
    assert action.title == (
        "Remove the internal taint from node gpu-two (pool twopool), keeping class external's"
    )
