"""A device-plugin config that would time-slice a node, against the node's own live signs: GPU
Feature Discovery's sharing labels (it labels the sharing of the config actually in force) and
the `nvidia.com/gpu` capacity against `nvidia.com/gpu.count` (rtholdout11's first world).

The GPU Operator's ClusterPolicy names the plugin ConfigMap with `devicePlugin.config.default: ""`
and the map holds one time-slicing key: the config-manager's fallback takes the only key, so the
sync resolves that config on every unlabelled node. Where GFD says `sharing-strategy=none`,
`replicas=1` and the capacity shows no replicas, the config is unverified (STACK-007 says both
sides) and no co-tenancy finding rests on it; where the labels agree, or are absent, it stands."""

from __future__ import annotations

from typing import Any

from tests.posture.builders import tenant
from tests.posture.gpu_access_world import (
    OPERATOR_NS,
    cluster_policy,
    configmap,
    container,
    node,
    pod,
    run,
    world,
)

ATLAS, CORVID = tenant("atlas", "internal"), tenant("corvid", "external")
GPU = "nvidia.com/gpu"
TS_ONLY_KEY = """\
version: v1
flags:
  migStrategy: none
sharing:
  timeSlicing:
    renameByDefault: false
    resources:
    - name: nvidia.com/gpu
      replicas: 4
"""
# The same, with the replicas under a name of their own: the upstream plugin ignores the rename
# and replicates every GPU as nvidia.com/gpu, a fork advertises nvidia.com/gpu-ts.
TS_RENAMED = TS_ONLY_KEY.replace(
    "      replicas: 4", "      rename: nvidia.com/gpu-ts\n      replicas: 4"
)
UNSHARED = {"nvidia.com/gpu.sharing-strategy": "none", "nvidia.com/gpu.replicas": "1"}
SLICED = {"nvidia.com/gpu.sharing-strategy": "time-slicing", "nvidia.com/gpu.replicas": "4"}
# GFD on an H200 node in MIG single strategy (all-3g.71gb): 8 GPUs, 16 MIG devices, each
# advertised as nvidia.com/gpu and counted by nvidia.com/gpu.count.
H200_MIG = {
    "nvidia.com/gpu.product": "NVIDIA-H200-MIG-3g.71gb",
    "nvidia.com/mig.capable": "true",
    "nvidia.com/mig.strategy": "single",
    "nvidia.com/mig.config": "all-3g.71gb",
    "nvidia.com/mig.config.state": "success",
}


def _cluster(labels: dict[str, str], capacity: dict[str, str], *, gpus: int = 8, cfg=TS_ONLY_KEY):
    """The GPU Operator's plugin config with one key and an empty default, an unlabelled node,
    and one pod of each tenant on it asking for one nvidia.com/gpu."""
    objects: list[dict[str, Any]] = [
        cluster_policy(devicePlugin={"config": {"name": "time-slicing-config", "default": ""}}),
        configmap(OPERATOR_NS, "time-slicing-config", {"l40s-ts": cfg}),
        node("gpu-a", gpus=gpus, capacity=capacity, labels=labels),
        pod("atlas", "atlas-eval", container(gpu={GPU: "1"})),
        pod("corvid", "corvid-train", container(gpu={GPU: "2"})),
    ]
    return world(objects, (ATLAS, CORVID))


def _stack007_error(inputs) -> str:
    (draft,) = run("STACK-007", inputs)
    (unread,) = draft.evidence["unreadable"]
    assert unread["object"] == f"ConfigMap {OPERATOR_NS}/time-slicing-config"
    assert unread["key"] == "l40s-ts"
    return unread["error"]


def test_mig_single_node_gfd_calls_unshared_is_not_time_sliced_by_the_only_key():
    # rtholdout11's h200-mig-01: 16 nvidia.com/gpu for GFD's count of 16, GFD says none.
    inputs = _cluster({**H200_MIG, **UNSHARED}, {GPU: "16"}, gpus=16)
    assert run("SHARE-001", inputs) == []
    assert run("SHARE-003", inputs) == []
    (gpu_node,) = inputs.snapshot.nodes
    assert (gpu_node.sharing_strategy, gpu_node.resource_sharing) == ("mig", ())
    assert gpu_node.time_slicing_replicas == 1
    # Both sides, in the node's basis and in the finding.
    for said in (gpu_node.sharing_basis, _stack007_error(inputs)):
        assert said.startswith("unverified: the config gpu-operator/time-slicing-config:l40s-ts")
        assert "time-slices nvidia.com/gpu with 4 replicas" in said
        assert "advertises 16 nvidia.com/gpu for its 16 devices (nvidia.com/gpu.count=16)" in said
        assert "nvidia.com/gpu.sharing-strategy=none and nvidia.com/gpu.replicas=1" in said
        assert "not from this config" in said


def test_gfd_calls_unshared_and_the_capacity_shows_no_replicas_of_a_renamed_entry():
    # Neither nvidia.com/gpu-ts nor more nvidia.com/gpu than GPUs: the plugin replicates nothing.
    inputs = _cluster(UNSHARED, {GPU: "8"}, cfg=TS_RENAMED)
    assert run("SHARE-001", inputs) == []
    assert run("SHARE-003", inputs) == []
    (gpu_node,) = inputs.snapshot.nodes
    assert (gpu_node.sharing_strategy, gpu_node.resource_sharing) == ("none", ())
    error = _stack007_error(inputs)
    assert "nvidia.com/gpu.sharing-strategy=none" in error and "advertises" not in error


def test_whole_gpus_gfd_calls_unshared_say_both_facts():
    inputs = _cluster(UNSHARED, {GPU: "8"})
    assert run("SHARE-001", inputs) == [] and run("SHARE-003", inputs) == []
    error = _stack007_error(inputs)
    assert "advertises 8 nvidia.com/gpu for its 8 physical GPUs" in error
    assert "nvidia.com/gpu.sharing-strategy=none" in error


def test_gfd_labels_agreeing_with_the_config_still_time_slice():
    inputs = _cluster(SLICED, {GPU: "32"})
    (shared,) = run("SHARE-001", inputs)
    assert shared.tenants == ("atlas", "corvid")
    assert shared.evidence["sharing_mode"] == "time_slicing"
    (forbidden,) = run("SHARE-003", inputs)
    assert forbidden.tenants == ("atlas", "corvid")
    assert run("STACK-007", inputs) == []


def test_without_gfd_sharing_labels_the_config_stays_the_evidence():
    # No GFD sharing label (no GFD, or one older than it): the capacity agrees with the config.
    inputs = _cluster({}, {GPU: "32"})
    (gpu_node,) = inputs.snapshot.nodes
    assert (gpu_node.sharing_strategy, gpu_node.time_slicing_replicas) == ("time_slicing", 4)
    assert [d.tenants for d in run("SHARE-001", inputs)] == [("atlas", "corvid")]
    assert [d.tenants for d in run("SHARE-003", inputs)] == [("atlas", "corvid")]
    assert run("STACK-007", inputs) == []


def test_gfd_unaware_of_the_config_loses_to_a_capacity_showing_its_replicas():
    # A GFD deployed without the plugin's config labels `none`; 32 nvidia.com/gpu for 8 GPUs
    # show the plugin does replicate them four ways: the config stands.
    inputs = _cluster(UNSHARED, {GPU: "32"})
    (gpu_node,) = inputs.snapshot.nodes
    assert [r.name for r in gpu_node.resource_sharing] == [GPU]
    assert [d.tenants for d in run("SHARE-001", inputs)] == [("atlas", "corvid")]
    assert run("STACK-007", inputs) == []
