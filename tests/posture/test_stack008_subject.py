"""STACK-008 is one finding per change that closes it (DESIGN §5): the ClusterPolicy's
toolkit.env where the GPU Operator's toolkit runs on the nodes, else the pool of nodes whose
toolkit is their own (pre-installed), else the node, keyed as before."""

from __future__ import annotations

from typing import Any

from inventory.visible_devices import envvar_access
from posture.actions import ActionFinding, group_of
from tests.posture.builders import tenant
from tests.posture.gpu_access_world import (
    OPERATOR_NS,
    cluster_policy,
    container,
    namespace,
    node,
    pod,
    run,
    world,
)
from tests.posture.test_gpu_access_env import _toolkit_pod

ALPHA, BETA = tenant("alpha"), tenant("beta", "external")
MANAGED = {f"nvidia.com/gpu.deploy.{c}": "true" for c in ("container-toolkit", "device-plugin")}
CLASS_KEY = "gpuposture.io/trust-class"


def _gpu_pod(ns: str, node_name: str) -> dict[str, Any]:
    return pod(
        ns, f"train-{node_name}", container(gpu={"nvidia.com/gpu": "1"}), node_name=node_name
    )


def _host_plugin(node_name: str) -> dict[str, Any]:
    """A standalone device plugin with its default (envvar) strategy, the toolkit on the host."""
    plugin = container("nvidia-device-plugin", "nvcr.io/nvidia/k8s-device-plugin:v0.17.1")
    return pod(OPERATOR_NS, f"nvidia-device-plugin-{node_name}", plugin, node_name=node_name)


def _tainted(name: str, trust_class: str) -> dict[str, Any]:
    found = node(name)
    found["spec"]["taints"] = [{"key": CLASS_KEY, "value": trust_class, "effect": "NoSchedule"}]
    return found


def test_the_operators_nodes_are_one_finding_on_the_clusterpolicy():
    names = ["gpu-a", "gpu-b", "gpu-c"]
    objects = [namespace("alpha"), namespace("beta"), cluster_policy()]
    objects += [node(n, labels=MANAGED) for n in names]
    objects += [_toolkit_pod(node_name=n) for n in names]
    objects += [_gpu_pod("alpha", "gpu-a"), _gpu_pod("beta", "gpu-b")]
    (draft,) = run("STACK-008", world(objects, (ALPHA, BETA)))
    assert (draft.subject_kind, draft.subject_name, draft.key) == (
        "ClusterPolicy",
        "cluster-policy",
        "",
    )
    assert draft.tenants == ("alpha", "beta")
    assert draft.evidence["node_count"] == 3 and draft.evidence["nodes"] == names
    assert draft.exposure == 24  # the GPUs spanned; the score's 1 + log2 diminishes it
    # Each tenant's own exposure (DESIGN §6): the GPUs of the nodes it has pods on.
    assert draft.tenant_exposures == {"alpha": 8, "beta": 8}
    assert draft.evidence["fix_in"] == "ClusterPolicy cluster-policy"


def test_a_pre_installed_toolkit_is_one_finding_per_pool_and_a_lone_node_keeps_its_key():
    objects = [namespace("alpha"), _tainted("bm-1", "internal"), _tainted("bm-2", "internal")]
    objects += [node("bm-3"), *(_host_plugin(n) for n in ("bm-1", "bm-2", "bm-3"))]
    objects += [_gpu_pod("alpha", n) for n in ("bm-1", "bm-2", "bm-3")]
    drafts = {
        (d.subject_kind, d.subject_name): d for d in run("STACK-008", world(objects, (ALPHA,)))
    }
    assert set(drafts) == {("NodePool", "internal"), ("Node", "bm-3")}
    pool = drafts[("NodePool", "internal")]
    assert pool.evidence["nodes"] == ["bm-1", "bm-2"] and pool.exposure == 16
    lone = drafts[("Node", "bm-3")]
    # The per-node finding's identity (so its history and acceptance) is what it always was.
    assert lone.identity() == ("STACK-008", "Node", "", "bm-3", "")
    assert lone.evidence["node"] == "bm-3" and lone.exposure == 8


def test_the_clusterpolicy_finding_is_one_action_in_the_clusterpolicy():
    finding = ActionFinding(
        id=1,
        check_id="STACK-008",
        severity="high",
        cluster="c",
        subject_kind="ClusterPolicy",
        subject_namespace="",
        subject_name="cluster-policy",
        title="t",
        evidence={},
        exposure=864,
        tenant_weights={"alpha": 1.0},
    )
    identity, title = group_of(finding)
    assert identity == ("c", "node", "STACK-008", "ClusterPolicy cluster-policy")
    assert title.endswith("unprivileged pods in ClusterPolicy cluster-policy")


def test_cdi_makes_the_nvidia_runtime_not_the_default_only_from_operator_v25_10():
    policies = [("cluster-policy", {"cdi_enabled": True})]
    facts = {
        version: envvar_access([], None, policies, operator_version=version).nvidia_default_runtime
        for version in ("24.9.2", "v25.10.0", None)
    }
    assert facts["24.9.2"].value == "true" and "before v25.10" in facts["24.9.2"].source
    assert facts["v25.10.0"].value == "false"
    assert facts[None].value is None and "unknown" in facts[None].source
