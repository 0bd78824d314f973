"""normalise(): node GPU sharing strategy, from labels and device-plugin configs."""

from __future__ import annotations

from typing import Any

import pytest

from inventory.sources.normalise import normalise
from tests.inventory.normalise_helpers import PLATFORM, TIME_SLICING, configmap, node, only_node

# --- nodes: sharing ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("labels", "capacity", "strategy", "replicas"),
    [
        (
            {"nvidia.com/gpu.sharing-strategy": "time-slicing", "nvidia.com/gpu.replicas": "4"},
            {},
            "time_slicing",
            4,
        ),
        (
            {"nvidia.com/gpu.sharing-strategy": "mps", "nvidia.com/gpu.replicas": "10"},
            {},
            "mps",
            10,
        ),
        ({"nvidia.com/gpu.replicas": "8"}, {}, "time_slicing", 8),
        ({"nvidia.com/gpu.replicas": "1"}, {}, "none", 1),
        # MIG devices time-sliced under the mixed strategy: GFD labels their replicas apart.
        (
            {
                "nvidia.com/gpu.sharing-strategy": "time-slicing",
                "nvidia.com/gpu.replicas": "1",
                "nvidia.com/mig.strategy": "mixed",
                "nvidia.com/mig-1g.10gb.replicas": "4",
                "nvidia.com/mig-1g.10gb.sharing-strategy": "time-slicing",
            },
            {"nvidia.com/mig-1g.10gb": "224", "nvidia.com/gpu": "0"},
            "time_slicing",
            4,
        ),
        ({"nvidia.com/gpu.product": "Tesla-T4-SHARED"}, {}, "time_slicing", None),
        (
            {"nvidia.com/mig.strategy": "single", "nvidia.com/mig.config": "all-1g.10gb"},
            {},
            "mig",
            None,
        ),
        (
            {"nvidia.com/mig.strategy": "mixed", "nvidia.com/mig.config": "all-disabled"},
            {},
            "none",
            None,
        ),
        ({"nvidia.com/mig.strategy": "mixed"}, {"nvidia.com/mig-3g.40gb": "2"}, "mig", None),
        # The operator labels every node with the cluster's strategy: that alone is not MIG.
        ({"nvidia.com/mig.strategy": "single"}, {"nvidia.com/gpu": "8"}, "none", None),
        (
            {"nvidia.com/mig.strategy": "none", "nvidia.com/mig.config": "all-balanced"},
            {},
            "none",
            None,
        ),
        ({"nvidia.com/vgpu.present": "true"}, {}, "vgpu", None),
        ({}, {"nvidia.com/gpu": "8"}, "none", None),
        # Four nvidia.com/gpu per physical GPU with no label saying why: replicated, and with
        # nothing saying how, the weakest isolation (never whole GPUs).
        ({}, {"nvidia.com/gpu": "32"}, "time_slicing", 4),
        ({"nvidia.com/gpu.sharing-strategy": "mps"}, {"nvidia.com/gpu": "32"}, "mps", 4),
        # Single-strategy MIG advertises each instance as nvidia.com/gpu: not replicas.
        (
            {"nvidia.com/mig.strategy": "single", "nvidia.com/mig.config": "all-1g.10gb"},
            {"nvidia.com/gpu": "56"},
            "mig",
            None,
        ),
    ],
)
def test_sharing_strategy_from_labels(labels, capacity, strategy, replicas):
    result = only_node(
        [node("gpu-node", {"nvidia.com/gpu.count": "8", **labels}, capacity=capacity)]
    )
    assert (result.sharing_strategy, result.time_slicing_replicas) == (strategy, replicas)


def test_mig_labels_are_kept():
    labels = {
        "nvidia.com/mig.strategy": "mixed",
        "nvidia.com/mig.config": "all-balanced",
        "nvidia.com/mig.config.state": "success",
        "nvidia.com/device-plugin.config": "a100-80gb",
    }
    result = only_node([node("gpu-a100-01", labels)])
    assert (result.mig_strategy, result.mig_config) == ("mixed", "all-balanced")
    assert (result.mig_config_state, result.device_plugin_config) == ("success", "a100-80gb")


def _plugin_configmap(name: str = "time-slicing-config", **data: str) -> dict[str, Any]:
    return configmap("gpu-operator", name, data)


@pytest.mark.parametrize(
    ("label", "configmaps", "strategy", "replicas"),
    [
        # The node names a key of the plugin config.
        (
            "tesla-t4",
            [
                _plugin_configmap(
                    **{
                        "tesla-t4": TIME_SLICING,
                        "a100": "version: v1\nflags:\n  migStrategy: mixed\n",
                    }
                )
            ],
            "time_slicing",
            4,
        ),
        (
            "a100",
            [
                _plugin_configmap(
                    **{
                        "tesla-t4": TIME_SLICING,
                        "a100": "version: v1\nflags:\n  migStrategy: mixed\n",
                    }
                )
            ],
            "none",
            None,
        ),
        # A label naming no config: the plugin refuses it, the config in effect is unknown.
        ("missing-key", [_plugin_configmap(any=TIME_SLICING)], "unknown", None),
        # No label: the plugin falls back to the only config, or to the one named "default".
        (None, [_plugin_configmap(any=TIME_SLICING)], "time_slicing", 4),
        (
            None,
            [
                _plugin_configmap(
                    default=TIME_SLICING, other="version: v1\nflags:\n  migStrategy: none\n"
                )
            ],
            "time_slicing",
            4,
        ),
        (None, [_plugin_configmap(one=TIME_SLICING, two=TIME_SLICING)], "none", None),
        # Two plugin ConfigMaps: which one the plugin reads is not in the snapshot.
        (
            None,
            [_plugin_configmap(any=TIME_SLICING), _plugin_configmap("second", any=TIME_SLICING)],
            "none",
            None,
        ),
    ],
)
def test_sharing_strategy_from_device_plugin_config(label, configmaps, strategy, replicas):
    labels = {"nvidia.com/gpu.count": "1"} | (
        {"nvidia.com/device-plugin.config": label} if label else {}
    )
    result = only_node([node("gpu-t4-01", labels), *configmaps])
    assert (result.sharing_strategy, result.time_slicing_replicas) == (strategy, replicas)


def test_config_fallback_does_not_apply_to_cpu_nodes_or_against_gfd():
    objects = [
        node("cpu-01", {}),
        node("gpu-01", {"nvidia.com/gpu.count": "1", "nvidia.com/gpu.sharing-strategy": "none"}),
        _plugin_configmap(any=TIME_SLICING),
    ]
    assert [n.sharing_strategy for n in normalise(objects, **PLATFORM).nodes] == ["none", "none"]


def test_a_config_key_defined_two_ways_is_a_warning_not_a_guess():
    objects = [
        node("gpu-01", {"nvidia.com/gpu.count": "1", "nvidia.com/device-plugin.config": "shared"}),
        _plugin_configmap("plugin-a", shared=TIME_SLICING),
        _plugin_configmap("plugin-b", shared="version: v1\nsharing:\n  timeSlicing: {}\n"),
    ]
    snapshot = normalise(objects, **PLATFORM)
    assert snapshot.nodes[0].sharing_strategy == "none"
    assert any("'shared' is defined differently" in w for w in snapshot.warnings)


def test_label_naming_no_config_is_unknown_and_says_why():
    # The device plugin's config-manager fails on a named config it does not have (it never
    # falls back to "default" then): what runs on the node is not in the snapshot.
    labels = {"nvidia.com/gpu.count": "2", "nvidia.com/device-plugin.config": "h100-typo"}
    maps = [_plugin_configmap(default=TIME_SLICING, **{"h100-ts": TIME_SLICING})]
    result = only_node([node("gpu-h100-07", labels), *maps])
    assert result.sharing_strategy == "unknown"
    (problem,) = result.unreadable_configs
    assert (problem.name, problem.purpose) == ("nvidia.com/device-plugin.config", "device_plugin")
    assert "'h100-typo'" in problem.error and "default, h100-ts" in problem.error


@pytest.mark.parametrize(
    ("extra", "configmaps", "strategy"),
    [
        # GFD's own verdict still wins over what the label names.
        ({"nvidia.com/gpu.sharing-strategy": "none"}, True, "none"),
        # No device-plugin config anywhere: nothing reads the label.
        ({}, False, "none"),
    ],
)
def test_label_naming_no_config_where_it_decides_nothing(extra, configmaps, strategy):
    labels = {"nvidia.com/gpu.count": "2", "nvidia.com/device-plugin.config": "gone", **extra}
    maps = [_plugin_configmap(any=TIME_SLICING)] if configmaps else []
    result = only_node([node("gpu-a10-03", labels), *maps])
    assert result.sharing_strategy == strategy


def _cluster_policy(**config: str) -> dict[str, Any]:
    return {
        "apiVersion": "nvidia.com/v1",
        "kind": "ClusterPolicy",
        "metadata": {"name": "gpu-cluster-policy"},
        "spec": {"devicePlugin": {"config": {"name": "sharing-by-model", **config}}},
    }


@pytest.mark.parametrize(
    ("default", "strategy", "replicas"),
    [
        # The operator hands its default to the plugin: unlabelled nodes read that key, even
        # with several keys and none named "default".
        ("l4-shared", "time_slicing", 4),
        ("plain", "none", None),
        # A default the ConfigMap does not have: the plugin refuses it.
        ("l4-sharde", "unknown", None),
    ],
)
def test_unlabelled_node_reads_the_cluster_policy_default(default, strategy, replicas):
    plain = "version: v1\nflags:\n  migStrategy: none\n"
    maps = [_plugin_configmap("sharing-by-model", plain=plain, **{"l4-shared": TIME_SLICING})]
    objects = [node("gpu-l4-02", {"nvidia.com/gpu.count": "2"}), _cluster_policy(default=default)]
    result = only_node([*objects, *maps])
    assert (result.sharing_strategy, result.time_slicing_replicas) == (strategy, replicas)
    if strategy == "unknown":
        (problem,) = result.unreadable_configs
        assert (problem.kind, problem.name) == ("ClusterPolicy", "devicePlugin.config.default")


def test_a_node_label_outranks_the_cluster_policy_default():
    labels = {"nvidia.com/gpu.count": "2", "nvidia.com/device-plugin.config": "plain"}
    plain = "version: v1\nflags:\n  migStrategy: none\n"
    maps = [_plugin_configmap("sharing-by-model", plain=plain, **{"l4-shared": TIME_SLICING})]
    result = only_node([node("gpu-l4-03", labels), _cluster_policy(default="l4-shared"), *maps])
    assert result.sharing_strategy == "none"


def test_capacity_over_a_cloud_gpu_count_with_no_plugin_to_read_is_unknown():
    # A Karpenter node with 8 GPUs advertising 24 and no plugin pod: 3 MIG instances per GPU
    # (single strategy) or 3 replicas; nothing shows which (tests/inventory/test_capacity_split).
    labels = {"karpenter.k8s.aws/instance-gpu-count": "8"}
    result = only_node([node("gpu-p5-01", labels, capacity={"nvidia.com/gpu": "24"})])
    assert (result.sharing_strategy, result.time_slicing_replicas) == ("unknown", None)


@pytest.mark.parametrize("labelled", [False, True])
def test_a_config_with_no_sharing_section_is_still_a_key_of_the_plugin(labelled):
    # The usual "no sharing" entry of the ConfigMap the ClusterPolicy names is `version: v1`
    # alone: the config-manager selects it like any other key, and it means whole GPUs. Read as
    # "no such key" it made every unlabelled node unknown with a false STACK-007.
    labels = {"nvidia.com/gpu.count": "2"} | (
        {"nvidia.com/device-plugin.config": "exclusive"} if labelled else {}
    )
    maps = [_plugin_configmap("sharing-by-model", exclusive="version: v1\n", ts=TIME_SLICING)]
    result = only_node([node("gpu-l4-04", labels), _cluster_policy(default="exclusive"), *maps])
    assert (result.sharing_strategy, result.time_slicing_replicas) == ("none", None)
    assert result.unreadable_configs == ()


def test_a_plain_config_counts_in_a_plugin_configmap_the_cluster_policy_does_not_name():
    # A Helm-installed plugin (no ClusterPolicy): the ConfigMap is the plugin's because other
    # keys are plugin configs, so its `version: v1` key is one too.
    labels = {"nvidia.com/gpu.count": "2", "nvidia.com/device-plugin.config": "whole"}
    maps = [_plugin_configmap("plugin-configs", whole="version: v1\n", ts=TIME_SLICING)]
    result = only_node([node("gpu-l4-05", labels), *maps])
    assert (result.sharing_strategy, result.unreadable_configs) == ("none", ())


def test_a_plain_config_alone_is_not_a_plugin_configmap():
    # `version: v1` alone says nothing about the device plugin: many ConfigMaps hold one.
    labels = {"nvidia.com/gpu.count": "2"}
    maps = [configmap("gpu-operator", "some-tool", {"config.yaml": "version: v1\n"})]
    result = only_node([node("gpu-l4-06", labels), *maps])
    assert (result.sharing_strategy, result.unreadable_configs) == ("none", ())


GPU_ONLY = """\
version: v1
sharing:
  timeSlicing:
    resources:
    - name: nvidia.com/gpu
      replicas: 8
"""


@pytest.mark.parametrize(
    ("capacity", "strategy", "replicas"),
    [
        # Every GPU in MIG mode (mixed strategy: MIG resources, no nvidia.com/gpu): the config's
        # only entry replicates whole GPUs, which this node has none of.
        ({"nvidia.com/mig-1g.10gb": "7"}, "mig", None),
        # Mixed with a GPU left whole: that GPU is time-sliced by the entry.
        ({"nvidia.com/mig-1g.10gb": "7", "nvidia.com/gpu": "8"}, "mig", 8),
        # Nothing advertised yet: the entry is taken as written.
        ({}, "time_slicing", 8),
    ],
)
def test_a_whole_gpu_entry_does_not_replicate_a_node_all_in_mig_mode(capacity, strategy, replicas):
    labels = {
        "nvidia.com/gpu.count": "1",
        "nvidia.com/mig.strategy": "mixed",
        "nvidia.com/mig.config": "all-1g.10gb" if capacity else "all-disabled",
    }
    result = only_node([node("mig-1", labels, capacity=capacity), _plugin_configmap(any=GPU_ONLY)])
    assert (result.sharing_strategy, result.time_slicing_replicas) == (strategy, replicas)
