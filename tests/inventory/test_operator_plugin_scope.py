"""The ClusterPolicy's device-plugin settings (`cdi.enabled`, `devicePlugin.env`) are the plugin's
only on the nodes the GPU Operator's plugin DaemonSet runs on: in a mixed cluster, a node whose
plugin runs on the host (Bottlerocket) or comes from NVIDIA's own chart never reads them."""

from __future__ import annotations

from typing import Any

from inventory.sources.normalise import normalise
from tests.inventory.normalise_helpers import controller, ctr, node, pod

IMAGE = "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"
DEPLOY = "nvidia.com/gpu.deploy.device-plugin"
CDI = "cdi-annotations,cdi-cri"
POLICY = {
    "apiVersion": "nvidia.com/v1",
    "kind": "ClusterPolicy",
    "metadata": {"name": "cluster-policy"},
    "spec": {"cdi": {"enabled": True}},
}


def _operator_plugin() -> dict[str, Any]:
    ds = controller("DaemonSet", "gpu-operator", "nvidia-device-plugin-daemonset", IMAGE)
    ds["spec"]["template"]["spec"]["nodeSelector"] = {DEPLOY: "true"}
    return ds


def _chart_plugin() -> list[dict[str, Any]]:
    """NVIDIA's standalone chart on the a10g group, its pod on chart-a: sets no strategy."""
    ds = controller("DaemonSet", "nvidia-device-plugin", "nvdp", IMAGE)
    ds["spec"]["template"]["spec"]["nodeSelector"] = {"group": "a10g"}
    plugin = ctr("nvidia-device-plugin-ctr", IMAGE, command=["nvidia-device-plugin"])
    running = pod("nvidia-device-plugin", "nvdp-x1", plugin, node_name="chart-a")
    running["metadata"]["ownerReferences"] = [{"kind": "DaemonSet", "name": "nvdp"}]
    return [ds, running]


def _nodes(*objects: dict[str, Any]):
    gpu = {"capacity": {"nvidia.com/gpu": "1"}}
    world = [
        node("operator-a", {"nvidia.com/gpu.count": "1", DEPLOY: "true"}, **gpu),
        node("host-a", {"nvidia.com/gpu.count": "1", DEPLOY: "false"}, **gpu),
        node("chart-a", {"nvidia.com/gpu.count": "1", "group": "a10g"}, **gpu),
        POLICY,
        *objects,
    ]
    found = normalise(world, configured_platform=("gpu-operator", "nvidia-device-plugin"))
    return {n.name: n for n in found.nodes}


def test_the_cluster_policy_sets_the_strategy_where_the_operators_plugin_runs():
    nodes = _nodes(_operator_plugin(), *_chart_plugin())
    assert nodes["operator-a"].device_list_strategy == CDI
    assert (
        "ClusterPolicy cluster-policy cdi.enabled"
        in nodes["operator-a"].device_list_strategy_source
    )


def test_a_host_run_plugin_is_unknown_not_the_cluster_policys():
    host = _nodes(_operator_plugin(), *_chart_plugin())["host-a"]
    assert host.device_list_strategy is None
    assert "the GPU Operator's device plugin does not run on the node" in (
        host.device_list_strategy_source
    )


def test_a_node_running_the_charts_plugin_runs_that_plugins_default():
    chart = _nodes(_operator_plugin(), *_chart_plugin())["chart-a"]
    assert chart.device_list_strategy == "envvar"
    assert "nvidia-device-plugin/nvdp-x1" in chart.device_list_strategy_source


def test_with_only_the_cluster_policy_read_the_deploy_label_says_where_it_applies():
    nodes = _nodes()
    assert nodes["operator-a"].device_list_strategy == CDI
    assert nodes["host-a"].device_list_strategy is None
