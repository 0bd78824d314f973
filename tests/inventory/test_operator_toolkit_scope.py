"""The ClusterPolicy's `cdi.enabled` and `toolkit.env` configure a node's container runtime only
where the GPU Operator's container toolkit runs: in a mixed cluster a node whose plugin runs on
the host (Bottlerocket), comes from NVIDIA's own chart, or whose toolkit was pre-installed never
reads them, so STACK-006 and STACK-008 judge it by its own facts (or say they are unknown)."""

from __future__ import annotations

from typing import Any

import posture.rules  # noqa: F401  (registers the checks)
from inventory.runtime import node_facts, resolved_strategy
from inventory.sources.normalise import normalise
from tests.inventory.normalise_helpers import controller, ctr, node, pod
from tests.posture.builders import inputs, run

PLUGIN_IMAGE = "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"
TOOLKIT_IMAGE = "nvcr.io/nvidia/k8s/container-toolkit:v1.17.4-ubuntu20.04"
PLUGIN_DEPLOY = "nvidia.com/gpu.deploy.device-plugin"
TOOLKIT_DEPLOY = "nvidia.com/gpu.deploy.container-toolkit"
ENVVAR = "ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED"
NOT_HERE = "the GPU Operator's container toolkit does not run on the node"


def _policy(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "nvidia.com/v1",
        "kind": "ClusterPolicy",
        "metadata": {"name": "cluster-policy"},
        "spec": {"cdi": {"enabled": True}, **spec},
    }


def _daemonset(namespace: str, name: str, image: str, selector: dict[str, str]) -> dict:
    ds = controller("DaemonSet", namespace, name, image)
    ds["spec"]["template"]["spec"]["nodeSelector"] = selector
    return ds


def _chart_plugin() -> list[dict[str, Any]]:
    """NVIDIA's standalone chart on the a10g group, its pod on chart-a: sets no strategy."""
    ds = _daemonset("nvidia-device-plugin", "nvdp", PLUGIN_IMAGE, {"group": "a10g"})
    plugin = ctr("nvidia-device-plugin-ctr", PLUGIN_IMAGE, command=["nvidia-device-plugin"])
    running = pod("nvidia-device-plugin", "nvdp-x1", plugin, node_name="chart-a")
    running["metadata"]["ownerReferences"] = [{"kind": "DaemonSet", "name": "nvdp"}]
    return [ds, running]


def _world(*objects: dict[str, Any], policy: dict[str, Any] | None = None, labels=None):
    gpu = {"capacity": {"nvidia.com/gpu": "1"}}
    count = {"nvidia.com/gpu.count": "1"}
    world = [
        node("operator-a", {**count, PLUGIN_DEPLOY: "true", **(labels or {})}, **gpu),
        node("host-a", {**count, PLUGIN_DEPLOY: "false"}, **gpu),
        node("chart-a", {**count, "group": "a10g"}, **gpu),
        policy or _policy(),
        *objects,
    ]
    found = normalise(world, configured_platform=("gpu-operator", "nvidia-device-plugin"))
    nodes = tuple(found.nodes)
    world = inputs(nodes=nodes, gpu_operator_policies=found.gpu_operator_policies)
    return {n.name: n for n in nodes}, world


def _operator_plugin() -> dict[str, Any]:
    return _daemonset(
        "gpu-operator", "nvidia-device-plugin-daemonset", PLUGIN_IMAGE, {PLUGIN_DEPLOY: "true"}
    )


def test_cdi_from_the_cluster_policy_only_where_the_operators_toolkit_runs():
    nodes, world = _world(_operator_plugin(), *_chart_plugin())
    assert [nodes[n].operator_toolkit for n in ("operator-a", "host-a", "chart-a")] == [
        True,
        False,
        False,
    ]
    drafts = {d.evidence["node"]: d for d in run("STACK-006", world)}
    assert sorted(drafts) == ["chart-a", "host-a"]  # operator-a: CDI on from the ClusterPolicy
    host = drafts["host-a"]
    assert host.evidence["cdi"] == "unknown" and NOT_HERE in host.evidence["source"]
    assert "is not shown to use CDI" in host.title
    # The ClusterPolicy is shown for what it is, next to the node's own label.
    assert host.evidence["cluster_policies"][0]["meaning"] == "enabled"
    assert host.evidence["label"] == "gpuposture.io/cdi"


def test_a_node_labelled_for_cdi_outside_the_operator_is_judged_by_its_label():
    nodes, world = _world(_operator_plugin(), policy=_policy(cdi={"enabled": False}))
    assert nodes["host-a"].operator_toolkit is False
    labelled = nodes["host-a"].labels | {"gpuposture.io/cdi": "enabled"}
    facts = node_facts(
        labelled, [("cluster-policy", {"cdi_enabled": False})], [], None, None, (None, ""), False
    )
    assert facts.cdi is True and "gpuposture.io/cdi=enabled" in facts.sources["cdi"]


def test_a_pre_installed_toolkit_reads_no_cluster_policy_when_the_toolkit_daemonset_skips_it():
    """The Operator's toolkit DaemonSet selects its deploy label; a node labelled `false` keeps
    the host's toolkit (its config.toml is not in the API), whatever the plugin label says."""
    toolkit = _daemonset(
        "gpu-operator",
        "nvidia-container-toolkit-daemonset",
        TOOLKIT_IMAGE,
        {TOOLKIT_DEPLOY: "true"},
    )
    nodes, world = _world(_operator_plugin(), toolkit, labels={TOOLKIT_DEPLOY: "false"})
    here = nodes["operator-a"]
    assert here.operator_toolkit is False
    # The Operator's plugin still names CDI devices there (its strategy), but that says how it
    # lists devices, not that the host's runtime injects them: CDI is not known, and STACK-006
    # says it cannot tell rather than pass.
    policies = [(p.name, p.spec) for p in world.snapshot.gpu_operator_policies]
    facts = node_facts(here.labels, policies, [], None, None, resolved_strategy(here), False)
    assert facts.cdi is None and "deviceListStrategy cdi-annotations" in facts.sources["cdi"]
    assert "spec.cdi.enabled" not in facts.sources["cdi"] and NOT_HERE in facts.sources["cdi"]
    (gap,) = [d for d in run("STACK-006", world) if d.evidence["node"] == "operator-a"]
    assert gap.evidence["cdi"] == "unknown" and "is not shown to use CDI" in gap.title
    # The node's own label still decides there.
    labelled = here.labels | {"gpuposture.io/cdi": "true"}
    facts = node_facts(labelled, policies, [], None, None, resolved_strategy(here), False)
    assert facts.cdi is True and "gpuposture.io/cdi=true" in facts.sources["cdi"]
    # Where the label admits it, the DaemonSet runs there and the ClusterPolicy decides.
    nodes, world = _world(_operator_plugin(), toolkit, labels={TOOLKIT_DEPLOY: "true"})
    assert nodes["operator-a"].operator_toolkit is True
    assert "operator-a" not in {d.evidence["node"] for d in run("STACK-006", world)}


def test_toolkit_env_of_the_cluster_policy_does_not_close_a_node_it_does_not_configure():
    """ACCEPT_...=false in the ClusterPolicy hardens the Operator's nodes only: chart-a runs the
    chart's plugin with the envvar strategy and a toolkit the ClusterPolicy never reached."""
    hardened = _policy(toolkit={"env": [{"name": ENVVAR, "value": "false"}]})
    nodes, world = _world(_operator_plugin(), *_chart_plugin(), policy=hardened)
    drafts = {d.evidence["node"]: d for d in run("STACK-008", world)}
    assert sorted(drafts) == ["chart-a"]
    toolkit = drafts["chart-a"].evidence["toolkit_accept_envvar_when_unprivileged"]
    assert toolkit["value"] is None and NOT_HERE in toolkit["source"]
    # The bulletin conditions read the same: not stated on chart-a, "no" on operator-a.
    policies = [(p.name, p.spec) for p in world.snapshot.gpu_operator_policies]
    for name, expected in (("chart-a", None), ("operator-a", False)):
        n = nodes[name]
        facts = node_facts(
            n.labels,
            policies,
            [],
            n.sharing_strategy,
            None,
            resolved_strategy(n),
            n.operator_toolkit,
        )
        assert facts.envvar_unprivileged is expected


def test_a_node_synced_before_the_toolkit_was_placed_reads_the_cluster_policy_as_before():
    facts = node_facts({}, [("cluster-policy", {"cdi_enabled": True})], [], None, None, None, None)
    assert facts.cdi is True


def test_toolkit_disabled_in_the_cluster_policy_leaves_cdi_unknown_whatever_the_plugin_lists():
    """`toolkit.enabled: false`: the host's toolkit runs the containers; the Operator's plugin
    listing devices by cdi-annotations does not say that toolkit injects them by CDI."""
    policies = [("cluster-policy", {"toolkit_enabled": False, "cdi_enabled": True})]
    resolved = ("cdi-annotations", "pod gpu-operator/nvidia-device-plugin-x env")
    facts = node_facts({}, policies, [], None, "25.10.0", resolved, None)
    assert facts.cdi is None and NOT_HERE in facts.sources["cdi"]
    assert facts.device_list_strategies == frozenset({"cdi-annotations"})


def test_the_operators_toolkit_pod_on_the_node_makes_it_the_operators_whatever_its_selector():
    """A toolkit DaemonSet in the Operator's namespace selecting `nvidia.com/gpu.present` (not
    its deploy label), its pod running on a node with no deploy labels: the ClusterPolicy's
    `cdi.enabled: false` is the node's, so STACK-006 says CDI is off, not unknown."""
    operator = controller(
        "Deployment", "gpu-operator", "gpu-operator", "nvcr.io/nvidia/gpu-operator:v24.9.2"
    )
    selector = {"nvidia.com/gpu.present": "true"}
    toolkit = _daemonset(
        "gpu-operator", "nvidia-container-toolkit-daemonset", TOOLKIT_IMAGE, selector
    )
    running = pod(
        "gpu-operator",
        "nvidia-container-toolkit-daemonset-x1",
        ctr("nvidia-container-toolkit-ctr", TOOLKIT_IMAGE),
        node_name="chart-a",
    )
    running["metadata"]["ownerReferences"] = [
        {"kind": "DaemonSet", "name": "nvidia-container-toolkit-daemonset"}
    ]
    off = _policy(cdi={"enabled": False})
    nodes, world = _world(operator, toolkit, running, policy=off)
    assert nodes["chart-a"].operator_toolkit is True
    (gap,) = [d for d in run("STACK-006", world) if d.evidence["node"] == "chart-a"]
    assert gap.evidence["cdi"] == "off" and NOT_HERE not in str(gap.evidence)
    # The same pod from a DaemonSet outside the Operator's namespace is another stack's.
    running["metadata"]["namespace"] = "vendor-toolkit"
    nodes, world = _world(operator, toolkit, running, policy=off)
    assert nodes["chart-a"].operator_toolkit is False
