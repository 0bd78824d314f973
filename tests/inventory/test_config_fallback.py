"""A GPU Operator cluster whose snapshot holds no ClusterPolicy, and whose operator DaemonSets
name no ConfigMap: the device-plugin and mig-parted configs of the platform namespaces are
matched as docs/clusters.md describes (inventory/sources/config_fallback.py), marked as matched
without the ClusterPolicy, and never make a node share GPUs its labels and capacity do not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from inventory.drift import ClusterState, detect_drift
from inventory.sources.normalise import normalise
from posture.inputs import PostureInputs
from tests.inventory.normalise_helpers import configmap, controller, ctr, node, pod
from tests.posture.builders import run, tenant

OP = "gpu-operator"
PLUGIN_IMAGE = "nvcr.io/nvidia/k8s-device-plugin:v0.17.3"
# NVIDIA's README example, in our words: time-slicing nvidia.com/gpu 10 ways, with no
# failRequestsGreaterThanOne (the plugin's default, false).
README_TS = """\
version: v1
sharing:
  timeSlicing:
    resources:
    - name: nvidia.com/gpu
      replicas: 10
"""
MIG_PARTED = """\
version: v1
mig-configs:
  all-disabled:
    - devices: all
      mig-enabled: false
  all-1g.10gb:
    - devices: all
      mig-enabled: true
      mig-devices:
        "1g.10gb": 7
"""
GPU_CTR = ctr("m", resources={"limits": {"nvidia.com/gpu": "1"}})
REALWORLD = Path("/work/shared/realworld/device-plugin/readme-L412-timeslicing-replicas10.yaml")


def operator_stack(*, plugin: bool = True, mig_manager: bool = False) -> list[dict[str, Any]]:
    """The operator's Deployment and the DaemonSets it renders, none naming a ConfigMap."""
    objects = [controller("Deployment", OP, "gpu-operator", "nvcr.io/nvidia/gpu-operator:v25.3.2")]
    if plugin:
        ds = "nvidia-device-plugin-daemonset"
        objects.append(controller("DaemonSet", OP, ds, PLUGIN_IMAGE))
    if mig_manager:
        image = "nvcr.io/nvidia/cloud-native/k8s-mig-manager:v0.12.1-ubuntu20.04"
        objects.append(controller("DaemonSet", OP, "nvidia-mig-manager", image))
    return objects


def ts_node(name: str = "n-ts", config: str | None = "any", **extra: str) -> dict[str, Any]:
    """Four T4s GFD labels time-sliced 4 ways (16 nvidia.com/gpu)."""
    labels = {
        "nvidia.com/gpu.product": "Tesla-T4",
        "nvidia.com/gpu.count": "4",
        "nvidia.com/gpu.sharing-strategy": "time-slicing",
        "nvidia.com/gpu.replicas": "4",
        **extra,
    }
    if config:
        labels["nvidia.com/device-plugin.config"] = config
    return node(name, labels, capacity={"nvidia.com/gpu": "16"})


def plain_node(name: str = "n-plain", config: str | None = "any") -> dict[str, Any]:
    """Four T4s advertised as four: nothing shares them."""
    labels = {"nvidia.com/gpu.product": "Tesla-T4", "nvidia.com/gpu.count": "4"}
    if config:
        labels["nvidia.com/device-plugin.config"] = config
    return node(name, labels, capacity={"nvidia.com/gpu": "4"})


def world(*nodes: dict[str, Any], data: dict[str, str] | None = None, **stack: bool) -> list:
    cm = configmap(OP, "time-slicing-config", data if data is not None else {"any": README_TS})
    return [*operator_stack(**stack), cm, *nodes]


def test_the_label_named_key_is_the_nodes_config_matched_without_the_cluster_policy():
    snap = normalise(world(ts_node()))
    (config,) = snap.sharing_configs
    assert (config.key, config.mode, config.replicas) == ("any", "time_slicing", 10)
    assert config.matched.startswith("matched without the ClusterPolicy (a GPU node's")
    assert "label names key any" in config.matched
    assert "DaemonSet gpu-operator/nvidia-device-plugin-daemonset names no ConfigMap" in (
        config.matched
    )
    (n,) = snap.nodes
    assert n.sharing_strategy == "time_slicing"
    assert n.device_plugin_config_used == "gpu-operator/time-slicing-config:any"
    assert "matched without the ClusterPolicy" in n.sharing_basis
    (warning,) = [w for w in snap.warnings if "time-slicing-config is taken as" in w]
    assert "without the ClusterPolicy" in warning and "labels name key any" in warning


def test_share005_fires_with_how_the_config_was_matched():
    snap = normalise([*world(ts_node()), pod("team-a", "ts-a", GPU_CTR, node_name="n-ts")])
    alpha = tenant("a", namespaces=("team-a",))
    inputs = PostureInputs(cluster="c", snapshot=snap, tenants=(alpha,))
    (draft,) = run("SHARE-005", inputs)
    assert draft.evidence["configmap"] == "gpu-operator/time-slicing-config"
    assert draft.evidence["nodes_using_it"] == ["n-ts"]
    assert "matched without the ClusterPolicy" in draft.evidence["config_matched"]
    assert draft.tenants == ("a",)
    assert draft.severity == ""  # the check's own (medium): a node reads the key now


def test_a_matched_config_invents_no_sharing():
    """A node advertising its four GPUs as four, labelled for the key: the config is not taken
    as in force there (it is latent), and the node stays unshared, not unknown."""
    snap = normalise(world(plain_node()))
    (n,) = snap.nodes
    assert n.sharing_strategy == "none"
    assert n.device_plugin_config_used == ""
    assert not n.unreadable_configs
    assert "not taken as in force" in n.sharing_basis
    (draft,) = run("SHARE-005", PostureInputs(cluster="c", snapshot=snap, tenants=()))
    assert draft.evidence["nodes_using_it"] == []
    assert draft.severity == ""  # latent, at the catalogue's medium
    assert "on no node now" in draft.title


def test_an_unlabelled_node_takes_the_maps_default_key():
    snap = normalise(world(ts_node(config=None), data={"default": README_TS, "other": README_TS}))
    (n,) = snap.nodes
    assert n.device_plugin_config_used == "gpu-operator/time-slicing-config:default"
    by_key = {c.key: c.matched for c in snap.sharing_configs}
    assert "its `default` key" in by_key["default"]
    assert "which no GPU node's" in by_key["other"]


def test_a_cluster_policy_naming_the_map_leaves_nothing_matched():
    policy = {
        "apiVersion": "nvidia.com/v1",
        "kind": "ClusterPolicy",
        "metadata": {"name": "cluster-policy"},
        "spec": {"devicePlugin": {"config": {"name": "time-slicing-config"}}},
    }
    snap = normalise([*world(ts_node()), policy])
    (config,) = snap.sharing_configs
    assert config.matched == ""
    assert not any("is taken as the device plugin's config" in w for w in snap.warnings)


def test_a_standalone_plugin_with_no_config_still_reads_no_platform_map():
    """A chart's plugin seen with no config file serves whole GPUs: no fallback there."""
    ds = controller("DaemonSet", "kube-system", "nvdp", PLUGIN_IMAGE)
    cm = configmap("kube-system", "time-slicing-config", {"any": README_TS})
    snap = normalise([ds, cm, plain_node()])
    assert snap.sharing_configs == ()


def test_the_mig_parted_config_is_read_without_the_cluster_policy():
    cm = configmap(OP, "default-mig-parted-config", {"config.yaml": MIG_PARTED})
    snap = normalise([*operator_stack(mig_manager=True), cm])
    assert [(c.name, c.purpose) for c in snap.configmaps] == [
        ("default-mig-parted-config", "mig_parted")
    ]
    (warning,) = [w for w in snap.warnings if "MIG Manager's mig-parted config" in w]
    assert "DaemonSet gpu-operator/nvidia-mig-manager names no ConfigMap" in warning


def test_drift001_on_a_matched_config():
    def state(text: str) -> ClusterState:
        snap = normalise(world(ts_node(), data={"any": text}))
        return ClusterState(
            nodes=snap.nodes, sharing_configs=snap.sharing_configs, configmaps=snap.configmaps
        )

    (change,) = detect_drift(state(README_TS), state(README_TS.replace("10", "2")))
    assert change.check_id == "DRIFT-001"
    assert (change.before["replicas"], change.after["replicas"]) == (10, 2)
    assert change.nodes == ("n-ts",)


@pytest.mark.skipif(not REALWORLD.exists(), reason="realworld samples not present")
def test_nvidias_readme_config_read_in_place():
    snap = normalise(world(ts_node(), data={"any": REALWORLD.read_text()}))
    (config,) = snap.sharing_configs
    assert (config.replicas, config.fail_requests_greater_than_one) == (10, False)
    assert config.matched
