"""`nodes/proxy`: the kubelet API's exec, run and attach into any pod of the node, counted as an
escalation path of K8S-003/-004 (GET alone opens a WebSocket exec); the kubelet's read-only
subresources and a RoleBinding (Node is cluster-scoped) reach nothing."""

from __future__ import annotations

from dataclasses import replace

import pytest

from posture.rules.registry import run_checks
from tests.posture.builders import gpu_node, pod
from tests.posture.test_rules_rbac import (
    DEVS,
    OPS,
    cluster_role,
    crb,
    rb,
    rule,
    sa,
    world,
)

NODE_PATCH = cluster_role("node-labeler", rule(verbs=("patch",)))
# A service account elsewhere that may relabel every node, running on the CPU node only.
DEPLOYER = crb("deployer-nodes", "node-labeler", sa("tools", "deployer"))
PODS = (
    pod(OPS, "nvidia-device-plugin-x1", node="gpu-1", service_account="nvidia-device-plugin"),
    pod("tools", "deployer-7f", node="cpu-1", service_account="deployer"),
    pod("alpha", "train-0", node="cpu-1"),
)
OPERATOR_PATH = (
    "may exec through the kubelet API ({verbs} on nodes/proxy) into pod "
    f"{OPS}/nvidia-device-plugin-x1 on node gpu-1 in GPU Operator namespace {OPS} "
    "(privileged, as its accounts)"
)


def _drafts(*tenant_rules, binding=None, pods=PODS):
    roles = [NODE_PATCH, cluster_role("r", *tenant_rules)]
    inputs = world(roles, [DEPLOYER, binding or crb("b", "r", DEVS)], pods=pods)
    nodes = (gpu_node("gpu-1"), gpu_node("cpu-1"))
    inputs = replace(inputs, snapshot=replace(inputs.snapshot, nodes=nodes))
    found = run_checks(inputs, only=["K8S-003", "K8S-004"])
    return {d.check_id: d for d in found if d.subject_name == "b"}


@pytest.mark.parametrize(
    ("verbs", "said"), [(("get",), "get"), (("create",), "create"), (("*",), "get, create")]
)
def test_nodes_proxy_on_every_node_execs_into_the_gpu_stack_a_total_path(verbs, said):
    found = _drafts(rule(resources=("nodes/proxy",), verbs=verbs))
    assert set(found) == {"K8S-003", "K8S-004"}
    for draft in found.values():
        assert OPERATOR_PATH.format(verbs=said) in draft.evidence["escalation"]


def test_nodes_proxy_names_the_pod_and_account_it_takes_on_a_node_it_names():
    # Only the CPU node: no stack pod there, but a pod running as an account that patches nodes.
    found = _drafts(rule(resources=("nodes/proxy",), verbs=("get",), names=("cpu-1",)))
    assert set(found) == {"K8S-003"}  # the deployer writes nodes, not the GPU configuration
    assert found["K8S-003"].evidence["escalation"] == [
        "may exec through the kubelet API (get on nodes/proxy) into pod tools/deployer-7f on "
        "node cpu-1 as ServiceAccount tools/deployer"
    ]


@pytest.mark.parametrize(
    "tenant_rule",
    [
        # A node that runs nothing of another namespace's (the tenant's own pods are its own).
        rule(resources=("nodes/proxy",), verbs=("get", "create"), names=("gpu-2",)),
        # Reading Node objects runs nothing.
        rule(resources=("nodes",), verbs=("get", "list", "watch")),
        # The kubelet's read-only endpoints have subresources of their own.
        rule(resources=("nodes/metrics", "nodes/stats", "nodes/log", "nodes/spec"), verbs=("*",)),
        # Neither verb the kubelet maps exec to.
        rule(resources=("nodes/proxy",), verbs=("list", "watch")),
    ],
)
def test_what_does_not_exec_through_the_kubelet_stays_quiet(tenant_rule):
    assert _drafts(tenant_rule) == {}


@pytest.mark.parametrize("namespace", ["tools", OPS])
def test_nodes_proxy_granted_by_a_rolebinding_grants_nothing(namespace):
    # Node is cluster-scoped: a RoleBinding never authorises a request on it.
    binding = rb(namespace, "b", "r", DEVS)
    assert _drafts(rule(resources=("nodes/proxy",), verbs=("get", "create")), binding=binding) == {}


def test_an_ended_pod_is_nothing_to_exec_into():
    ended = (
        pod(OPS, "nvidia-device-plugin-x1", node="gpu-1", phase="Succeeded"),
        pod("tools", "deployer-7f", node="cpu-1", service_account="deployer", phase="Failed"),
    )
    assert _drafts(rule(resources=("nodes/proxy",), verbs=("get",)), pods=ended) == {}
