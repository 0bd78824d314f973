"""One reading of the device plugin's device-list strategy per node, made at sync: bulletin
conditions (nvidia-5659 affects the plugin only with cdi-annotations / cdi-cri) and STACK-008
judge the same value. The EKS shape: NVIDIA's plugin chart on the g5 node group, its pod setting
no strategy (the plugin's default, envvar), and a Bottlerocket p5 node whose host runs the
plugin (no pod: nothing to read)."""

from __future__ import annotations

from typing import Any

from inventory.conditions import evaluate
from inventory.runtime import node_facts, resolved_strategy
from inventory.sources.normalise import normalise
from posture.inputs import PostureInputs
from posture.rules.stack.visible_devices import node_envvar_access
from tests.inventory.normalise_helpers import controller, ctr, node, pod

PLUGIN_IMAGE = "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"
NS = "nvidia-device-plugin"
PLUGIN_5659 = "only when device-list-strategy is cdi-annotations and/or cdi-cri"
G5 = {"karpenter.k8s.aws/instance-gpu-count": "1", "eks.amazonaws.com/nodegroup": "g5-shared"}
P5 = {"karpenter.k8s.aws/instance-gpu-count": "8"}


def _plugin_daemonset(*args: str) -> dict[str, Any]:
    ds = controller("DaemonSet", NS, "nvdp", PLUGIN_IMAGE)
    spec = ds["spec"]["template"]["spec"]
    spec["containers"][0] |= {"name": "nvidia-device-plugin-ctr", "args": list(args)}
    spec["nodeSelector"] = {"eks.amazonaws.com/nodegroup": "g5-shared"}
    return ds


def _plugin_pod(**fields: Any) -> dict[str, Any]:
    plugin = ctr("nvidia-device-plugin-ctr", PLUGIN_IMAGE, command=["nvidia-device-plugin"])
    sidecar = ctr("nvidia-device-plugin-sidecar", PLUGIN_IMAGE, command=["config-manager"])
    found = pod(NS, "nvdp-x1", sidecar, plugin | fields, node_name="g5-a")
    found["metadata"]["ownerReferences"] = [{"kind": "DaemonSet", "name": "nvdp"}]
    return found


def _nodes(*objects: dict[str, Any]):
    world = [
        node("g5-a", G5, capacity={"nvidia.com/gpu": "1"}),
        node("p5-a", P5, capacity={"nvidia.com/gpu": "8"}),
        *objects,
    ]
    snapshot = normalise(world, configured_platform=(NS,))
    return snapshot, {n.name: n for n in snapshot.nodes}


def _plugin_condition(found) -> bool | None:
    facts = node_facts(found.labels, [], [], found.sharing_strategy, None, resolved_strategy(found))
    return evaluate(PLUGIN_5659, facts, "0.17.0").affected


def test_a_plugin_pod_that_sets_no_strategy_runs_envvar_for_bulletins_and_stack008_alike():
    snapshot, nodes = _nodes(_plugin_daemonset(), _plugin_pod())
    g5 = nodes["g5-a"]
    assert g5.device_list_strategy == "envvar"
    assert "nvidia-device-plugin/nvdp-x1 sets none" in g5.device_list_strategy_source
    assert _plugin_condition(g5) is False  # 5659 does not reach this plugin: not affected
    inputs = PostureInputs(cluster="eks", snapshot=snapshot, tenants=())
    assert node_envvar_access(inputs, g5).device_list_strategy.value == "envvar"


def test_the_strategy_the_plugin_pod_sets_decides():
    _, nodes = _nodes(_plugin_daemonset(), _plugin_pod(args=["--device-list-strategy=cdi-cri"]))
    assert nodes["g5-a"].device_list_strategy == "cdi-cri"
    assert _plugin_condition(nodes["g5-a"]) is True


def test_with_no_pod_the_daemonset_that_runs_there_is_read():
    _, nodes = _nodes(_plugin_daemonset("--device-list-strategy", "cdi-annotations"))
    g5 = nodes["g5-a"]
    assert g5.device_list_strategy == "cdi-annotations"
    assert "DaemonSet nvidia-device-plugin/nvdp" in g5.device_list_strategy_source


def test_a_host_run_plugin_leaves_the_strategy_unknown_and_the_bulletin_unverified():
    _, nodes = _nodes(_plugin_daemonset(), _plugin_pod())
    p5 = nodes["p5-a"]  # Bottlerocket: the plugin is a host service, no pod to read
    assert p5.device_list_strategy is None
    assert p5.device_list_strategy_source.startswith("unverified")
    assert _plugin_condition(p5) is None
