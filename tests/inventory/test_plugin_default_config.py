"""The standalone device-plugin chart's `config.default`: its config-manager containers carry it
as DEFAULT_CONFIG, the key every node without an `nvidia.com/device-plugin.config` label reads
(the EKS shape: NVIDIA's chart on the g5 node group, its ConfigMap holding several keys)."""

from __future__ import annotations

from typing import Any

from inventory.sources.normalise import normalise
from tests.inventory.normalise_helpers import (
    TIME_SLICING,
    configmap,
    controller,
    ctr,
    node,
    pod,
    with_config_volumes,
)

NS = "nvidia-device-plugin"
IMAGE = "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"
CONFIGS = "nvdp-nvidia-device-plugin-configs"
G5 = {"eks.amazonaws.com/nodegroup": "g5-shared"}


def _manager(name: str, default: str) -> dict[str, Any]:
    env = [
        {"name": "NODE_LABEL", "value": "nvidia.com/device-plugin.config"},
        {"name": "DEFAULT_CONFIG", "value": default},
        {"name": "FALLBACK_STRATEGIES", "value": "named,single"},
    ]
    return ctr(name, IMAGE, command=["config-manager"], env=env)


def _chart(default: str, *, running: bool = True) -> list[dict[str, Any]]:
    """The chart's DaemonSet (init + sidecar config-manager, the plugin) and its pod on g5-a."""
    ds = with_config_volumes(controller("DaemonSet", NS, "nvdp", IMAGE), CONFIGS)
    spec = ds["spec"]["template"]["spec"]
    spec["initContainers"] = [_manager("nvidia-device-plugin-init", default)]
    plugin = ctr("nvidia-device-plugin-ctr", IMAGE, command=["nvidia-device-plugin"])
    spec["containers"] = [_manager("nvidia-device-plugin-sidecar", default), plugin]
    spec["nodeSelector"] = G5
    found = pod(NS, "nvdp-x1", *spec["containers"], node_name="g5-a")
    found["spec"]["initContainers"] = spec["initContainers"]
    found["spec"]["volumes"] = spec["volumes"]
    found["metadata"]["ownerReferences"] = [{"kind": "DaemonSet", "name": "nvdp"}]
    return [ds, found] if running else [ds]


def _nodes(*objects: dict[str, Any]):
    world = [
        node("g5-a", G5, capacity={"nvidia.com/gpu": "4"}),
        configmap(NS, CONFIGS, {"a10g-ts": TIME_SLICING, "exclusive": "version: v1\n"}),
        *objects,
    ]
    return {n.name: n for n in normalise(world, configured_platform=(NS,)).nodes}


def test_an_unlabelled_node_reads_the_charts_default_config():
    g5 = _nodes(*_chart("a10g-ts"))["g5-a"]
    assert (g5.sharing_strategy, g5.time_slicing_replicas) == ("time_slicing", 4)
    assert "nvidia.com/gpu" in [r.name for r in g5.resource_sharing]
    assert g5.unreadable_configs == ()


def test_with_no_pod_the_daemonset_template_gives_the_default():
    g5 = _nodes(*_chart("a10g-ts", running=False))["g5-a"]
    assert (g5.sharing_strategy, g5.time_slicing_replicas) == ("time_slicing", 4)


def test_the_node_label_still_outranks_the_default():
    world = _chart("a10g-ts")
    labelled = node("g5-a", G5 | {"nvidia.com/device-plugin.config": "exclusive"})
    labelled["status"]["capacity"] = {"nvidia.com/gpu": "1"}
    found = normalise(
        [labelled, configmap(NS, CONFIGS, {"a10g-ts": TIME_SLICING, "exclusive": "version: v1\n"})]
        + world,
        configured_platform=(NS,),
    ).nodes
    assert found[0].sharing_strategy == "none"


def test_a_default_no_key_has_leaves_the_node_unknown_and_names_the_daemonset():
    # The config-manager refuses a DEFAULT_CONFIG its ConfigMap lacks: the plugin does not start
    # with a config we can read, so the node's sharing is unknown, and the DaemonSet is to fix.
    g5 = _nodes(*_chart("a10g-timeslice"))["g5-a"]
    assert g5.sharing_strategy == "unknown"
    (problem,) = g5.unreadable_configs
    assert (problem.kind, problem.namespace, problem.name) == ("DaemonSet", NS, "nvdp")
    assert "DEFAULT_CONFIG" in problem.error and "'a10g-timeslice'" in problem.error


def test_share005_lists_the_nodes_reading_the_default_and_a_key_no_node_reads_is_latent():
    """SHARE-005 follows the config the sync found in force: the unlabelled g5 node reads the
    chart's DEFAULT_CONFIG among several keys; a lax key no node reads is said, low."""
    from posture.inputs import PostureInputs
    from tests.posture.builders import run

    lax = TIME_SLICING.replace(
        "failRequestsGreaterThanOne: true", "failRequestsGreaterThanOne: false"
    )
    world = [
        node("g5-a", G5, capacity={"nvidia.com/gpu": "4"}),
        configmap(NS, CONFIGS, {"a10g-ts": lax, "spare-ts": lax, "exclusive": "version: v1\n"}),
        *_chart("a10g-ts"),
    ]
    snapshot = normalise(world, configured_platform=(NS,))
    found = {d.evidence["key"]: d for d in run("SHARE-005", PostureInputs("c", snapshot, ()))}
    assert found["a10g-ts"].evidence["nodes_using_it"] == ["g5-a"]
    assert found["a10g-ts"].severity == ""  # the check's own, medium
    assert found["spare-ts"].evidence["nodes_using_it"] == []
    # Latent, said in the title, at the catalogue's medium (DESIGN §5 severities are contracts).
    assert found["spare-ts"].severity == "" and "on no node now" in found["spare-ts"].title
    assert found["spare-ts"].tenants == ()
