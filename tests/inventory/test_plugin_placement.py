"""A device-plugin config is in force only on the nodes where a plugin that mounts it runs.

The EKS shape: NVIDIA's device-plugin chart (time-slicing, 4 replicas) pinned by nodeSelector to
the g5 node group, and p5 nodes on Bottlerocket, whose host runs its own plugin and advertises
one nvidia.com/gpu per physical GPU (8, as Karpenter's instance-gpu-count says)."""

from __future__ import annotations

from typing import Any

from inventory.sources.normalise import normalise
from tests.inventory.normalise_helpers import (
    TIME_SLICING_LOOSE,
    configmap,
    controller,
    ctr,
    node,
    pod,
)

PLUGIN_IMAGE = "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"
NS = "nvidia-device-plugin"
CONFIG = TIME_SLICING_LOOSE
P5 = {"karpenter.k8s.aws/instance-gpu-count": "8", "karpenter.sh/nodepool": "p5-clinical"}
G5 = {"karpenter.k8s.aws/instance-gpu-count": "1", "eks.amazonaws.com/nodegroup": "g5-shared"}


def _plugin(node_selector: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    ds = controller("DaemonSet", NS, "nvdp", PLUGIN_IMAGE)
    template = ds["spec"]["template"]["spec"]
    template["volumes"] = [{"name": "available-configs", "configMap": {"name": "nvdp-configs"}}]
    template["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists"}]
    if node_selector is not None:
        template["nodeSelector"] = node_selector
    template.update(spec)
    return ds


def _world(*extra: dict[str, Any], p5_gpus: str = "8") -> dict[str, Any]:
    objects = [
        {"kind": "Namespace", "metadata": {"name": NS}},
        node("p5-a", P5, capacity={"nvidia.com/gpu": p5_gpus}),
        node("g5-a", G5, capacity={"nvidia.com/gpu": "4"}),
        configmap(NS, "nvdp-configs", {"a10g-ts": CONFIG}),
        *extra,
    ]
    snapshot = normalise(objects, configured_platform=(NS,))
    return {n.name: n for n in snapshot.nodes}


def test_a_config_reaches_only_the_nodes_its_plugin_daemonset_runs_on():
    nodes = _world(_plugin({"eks.amazonaws.com/nodegroup": "g5-shared"}))
    g5, p5 = nodes["g5-a"], nodes["p5-a"]
    assert (g5.sharing_strategy, g5.time_slicing_replicas) == ("time_slicing", 4)
    assert [r.name for r in g5.resource_sharing] == ["nvidia.com/gpu"]
    # The p5 host runs its own plugin: 8 nvidia.com/gpu for 8 GPUs, whole devices.
    assert (p5.sharing_strategy, p5.time_slicing_replicas, p5.resource_sharing) == (
        "none",
        None,
        (),
    )
    assert p5.unreadable_configs == ()


def test_a_plugin_pod_on_the_node_places_the_config_whatever_the_daemonset_selects():
    running = pod(NS, "nvdp-x1", ctr("plugin", PLUGIN_IMAGE), node_name="p5-a")
    running["metadata"]["ownerReferences"] = [{"kind": "DaemonSet", "name": "nvdp"}]
    nodes = _world(_plugin({"eks.amazonaws.com/nodegroup": "g5-shared"}), running, p5_gpus="32")
    assert (nodes["p5-a"].sharing_strategy, nodes["p5-a"].time_slicing_replicas) == (
        "time_slicing",
        4,
    )


def test_with_no_plugin_daemonset_in_the_snapshot_the_config_is_assumed_and_says_so():
    nodes = _world(p5_gpus="32")
    p5 = nodes["p5-a"]
    assert p5.sharing_strategy == "time_slicing"
    (shared,) = p5.resource_sharing
    assert "assumed" in shared.note and f"{NS}/nvdp-configs" in shared.note


def test_capacity_equal_to_the_physical_count_leaves_a_time_slicing_config_unverified():
    # Where the plugin runs is not shown, and the node advertises one per GPU: the config says
    # 4 replicas, the capacity says none. Neither certain time-slicing nor a silent "none".
    p5 = _world()["p5-a"]
    assert (p5.sharing_strategy, p5.time_slicing_replicas, p5.resource_sharing) == (
        "unknown",
        None,
        (),
    )
    (problem,) = p5.unreadable_configs
    assert problem.error.startswith("unverified") and "advertises 8 nvidia.com/gpu" in problem.error


def test_an_unreadable_config_makes_unknown_only_the_nodes_its_plugin_runs_on():
    broken = configmap(NS, "nvdp-configs", {"a10g-ts": "version: v1\nsharing: [timeSlicing\n"})
    objects = [
        {"kind": "Namespace", "metadata": {"name": NS}},
        node("p5-a", P5, capacity={"nvidia.com/gpu": "8"}),
        node("g5-a", G5, capacity={"nvidia.com/gpu": "4"}),
        broken,
        _plugin({"eks.amazonaws.com/nodegroup": "g5-shared"}),
    ]
    nodes = {n.name: n for n in normalise(objects, configured_platform=(NS,)).nodes}
    assert nodes["g5-a"].sharing_strategy == "unknown"
    assert [p.name for p in nodes["g5-a"].unreadable_configs] == ["nvdp-configs"]
    # The p5 host's plugin never reads it: nothing of it is unknown there.
    assert (nodes["p5-a"].sharing_strategy, nodes["p5-a"].unreadable_configs) == ("none", ())
