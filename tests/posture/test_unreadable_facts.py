"""Unreadable facts are findings (issue 17 item 2): a GPU label whose value no component writes,
or a device-plugin sharing entry we cannot interpret, is STACK-007 on the node ("unknown, could
not read X"), never a silent default. Objects as `kubectl get -o json` prints them."""

from __future__ import annotations

import pytest

from tests.inventory.normalise_helpers import TIME_SLICING_LOOSE
from tests.posture.builders import tenant
from tests.posture.gpu_access_world import (
    OPERATOR_NS,
    cluster_policy,
    configmap,
    container,
    namespace,
    node,
    pod,
    run,
    world,
)

ALPHA = tenant("alpha", "internal")


def _node_world(labels: dict[str, str], capacity: dict | None = None, *extra: dict):
    objects = [
        node("gpu-a", gpus=8, capacity=capacity or {"nvidia.com/gpu": "8"}, labels=labels),
        namespace("alpha"),
        pod("alpha", "train-0", container(gpu={"nvidia.com/gpu": "1"})),
        *extra,
    ]
    return world(objects, (ALPHA,))


@pytest.mark.parametrize(
    ("label", "value", "error"),
    [
        ("nvidia.com/gpu.count", "eight", "not an integer"),
        ("nvidia.com/gpu.count", "-1", "not an integer"),
        ("nvidia.com/gpu.replicas", "four", "not an integer"),
        ("nvidia.com/gpu.replicas", "0", "below 1"),
        ("nvidia.com/gpu.sharing-strategy", "timeslice", "not one of"),
        ("nvidia.com/mig.strategy", "dual", "not one of"),
        ("nvidia.com/mig.config.state", "in-progress", "not one of"),
    ],
)
def test_a_garbled_gpu_label_is_stack007_naming_it(label, value, error):
    inputs = _node_world({label: value})
    (draft,) = run("STACK-007", inputs)
    (entry,) = draft.evidence["unreadable"]
    assert entry["object"] == f"label {label}"
    assert repr(value) in entry["error"] and error in entry["error"]
    assert f"could not read label {label}" in draft.title
    assert draft.tenants == ("alpha",)


@pytest.mark.parametrize(
    "labels",
    [
        {"nvidia.com/gpu.count": "8", "nvidia.com/gpu.replicas": "4"},
        {"nvidia.com/gpu.sharing-strategy": "time-slicing"},
        {"nvidia.com/gpu.sharing-strategy": "none", "nvidia.com/mig.strategy": "single"},
        {"nvidia.com/mig.config.state": "success", "nvidia.com/mig.strategy": "mixed"},
        {"nvidia.com/mig.config.state": "failed"},  # SHARE-009's, a state MIG Manager writes
        {},  # absent labels are not unreadable
    ],
)
def test_labels_as_the_components_write_them_are_quiet(labels):
    assert run("STACK-007", _node_world(labels)) == []


def test_a_garbled_sharing_strategy_makes_the_sharing_unknown_not_none():
    inputs = _node_world({"nvidia.com/gpu.sharing-strategy": "slicing-ish"})
    (gpu_node,) = inputs.snapshot.nodes
    assert gpu_node.sharing_strategy == "unknown"


def test_a_garbled_count_leaves_the_count_unknown_and_the_node_a_gpu_node():
    inputs = _node_world({"nvidia.com/gpu.count": "8 GPUs"})
    (gpu_node,) = inputs.snapshot.nodes
    assert (gpu_node.gpu_count, gpu_node.is_gpu_node) == (None, True)


def test_a_cpu_node_with_a_stray_label_is_not_judged():
    cpu = node("cpu-1", gpus=0, labels={"nvidia.com/mig.strategy": "dual"})
    cpu["metadata"]["labels"].pop("nvidia.com/gpu.present")
    cpu["metadata"]["labels"].pop("nvidia.com/gpu.count")
    assert run("STACK-007", world([cpu], (ALPHA,))) == []


PLUGIN_LABELS = {"nvidia.com/device-plugin.config": "ts"}


def _plugin_world(config: str):
    policy = cluster_policy(devicePlugin={"config": {"name": "plugin-config", "default": "ts"}})
    objects = [policy, configmap(OPERATOR_NS, "plugin-config", {"ts": config})]
    return _node_world(PLUGIN_LABELS, {"nvidia.com/gpu": "32"}, *objects)


GOOD_ENTRY = TIME_SLICING_LOOSE


@pytest.mark.parametrize(
    ("entry", "error"),
    [
        ("    - replicas: 4\n", "name is missing"),
        ("    - name: nvidia.com/gpu\n      replicas: four\n", "replicas 'four'"),
        ("    - name: nvidia.com/gpu\n      replicas: 0\n", "replicas 0"),
        (
            "    - name: nvidia.com/gpu\n      replicas: 4\n      devices: some\n",
            "devices 'some'",
        ),
        ("    - name: nvidia.com/gpu\n      replicas: 4\n      rename: [a]\n", "rename ['a']"),
        ("    - nvidia.com/gpu\n", "is not a mapping"),
    ],
)
def test_a_plugin_entry_we_cannot_interpret_makes_the_config_unreadable(entry, error):
    config = "version: v1\nsharing:\n  timeSlicing:\n    resources:\n" + entry
    inputs = _plugin_world(config)
    (gpu_node,) = inputs.snapshot.nodes
    assert gpu_node.sharing_strategy == "unknown"  # never "none" for a dropped entry
    (draft,) = run("STACK-007", inputs)
    (problem,) = draft.evidence["unreadable"]
    assert problem["object"] == f"ConfigMap {OPERATOR_NS}/plugin-config"
    assert problem["key"] == "ts" and error in problem["error"]


def test_a_plugin_config_we_can_interpret_is_quiet():
    inputs = _plugin_world(GOOD_ENTRY)
    (gpu_node,) = inputs.snapshot.nodes
    assert gpu_node.sharing_strategy == "time_slicing"
    assert run("STACK-007", inputs) == []
