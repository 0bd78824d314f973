"""A node that advertises more nvidia.com/gpu than it has GPUs, with no GPU Feature Discovery label
saying why. The AKS shape: an ND96amsr_A100_v4 pool created with `--gpu-instance-profile MIG3g`
(8 A100 80GB, two 3g.40gb instances each) and NVIDIA's plugin run with `--mig-strategy=single`:
the node advertises `nvidia.com/gpu: 16`, and only the instance type says it has 8 GPUs."""

from __future__ import annotations

from typing import Any

import pytest

from inventory.sources.normalise import normalise
from posture.rules.plugin_holdings import plugin_holdings
from tests.inventory.normalise_helpers import controller, ctr, node, pod
from tests.posture.builders import inputs, tenant

PLUGIN_IMAGE = "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"
AKS_MIG = {
    "kubernetes.azure.com/agentpool": "ndmig3g",
    "kubernetes.azure.com/accelerator": "nvidia",
    "node.kubernetes.io/instance-type": "Standard_ND96amsr_A100_v4",
}
NODE = "aks-ndmig3g-27272727-vmss000000"
ACME, GLOBEX = (
    tenant("acme", "external", ("cust-acme",)),
    tenant("globex", "external", ("cust-globex",)),
)


def _plugin(args: list[str] | None = None, env: list[dict[str, str]] | None = None) -> list[dict]:
    """The plugin DaemonSet of AKS's MIG guide and its pod on the node."""
    ds = controller("DaemonSet", "kube-system", "nvidia-device-plugin-daemonset", PLUGIN_IMAGE)
    container = ctr("nvidia-device-plugin-ctr", PLUGIN_IMAGE, args=args or [], env=env or [])
    ds["spec"]["template"]["spec"]["containers"] = [container]
    running = pod("kube-system", "nvidia-device-plugin-daemonset-7xq2c", container, node_name=NODE)
    running["metadata"]["ownerReferences"] = [
        {"kind": "DaemonSet", "name": "nvidia-device-plugin-daemonset"}
    ]
    return [ds, running]


def _trainer(namespace: str) -> dict[str, Any]:
    gpu = {"limits": {"nvidia.com/gpu": "1"}, "requests": {"nvidia.com/gpu": "1"}}
    return pod(namespace, "train-0", ctr("train", resources=gpu), node_name=NODE)


def _read(*plugin: dict[str, Any], capacity: str = "16"):
    world = [
        node(NODE, AKS_MIG, capacity={"nvidia.com/gpu": capacity}),
        *plugin,
        _trainer("cust-acme"),
        _trainer("cust-globex"),
    ]
    snapshot = normalise(world, configured_platform=("kube-system",))
    (found,) = snapshot.nodes
    return snapshot, found


def _modes(snapshot, found) -> set[str]:
    world = inputs(nodes=(found,), pods=snapshot.pods, tenants=(ACME, GLOBEX))
    return {h.mode for h in plugin_holdings(world, found) if h.tenant is not None}


@pytest.mark.parametrize(
    "plugin",
    [
        _plugin(args=["--mig-strategy=single", "--fail-on-init-error=false"]),
        _plugin(env=[{"name": "MIG_STRATEGY", "value": "single"}]),  # the chart's migStrategy
    ],
)
def test_an_aks_mig_pool_is_read_as_mig_instances_not_sixteen_whole_gpus(plugin):
    snapshot, found = _read(*plugin)
    assert found.gpu_count == 8  # the instance type's GPUs, not the 16 MIG instances
    assert (found.sharing_strategy, found.mig_strategy) == ("mig", "single")
    assert found.time_slicing_replicas is None
    # The two external tenants each hold a MIG GPU instance of a shared A100, not a whole GPU.
    assert _modes(snapshot, found) == {"mig_gi"}


def test_with_no_plugin_pod_to_read_the_split_is_unknown_never_exclusive():
    # AKS's managed GPU stack (or any host-run plugin): nothing shows MIG from replicas.
    snapshot, found = _read()
    assert (found.sharing_strategy, found.time_slicing_replicas) == ("unknown", None)
    (problem,) = found.unreadable_configs
    assert (problem.kind, problem.name) == ("NodeCapacity", "nvidia.com/gpu")
    assert "16 nvidia.com/gpu for its 8 physical GPUs" in problem.error
    assert "exclusive" not in _modes(snapshot, found)
    # The device-list strategy is unverified for want of a plugin, not for an unreadable config.
    assert found.device_list_strategy_source.startswith("unverified: no device-plugin pod")


def test_a_plugin_with_no_mig_strategy_replicates_the_surplus():
    # The plugin's default MIG strategy is none: 16 for 8 GPUs can only be replicas.
    snapshot, found = _read(*_plugin(args=["--fail-on-init-error=false"]))
    assert (found.sharing_strategy, found.time_slicing_replicas) == ("time_slicing", 2)
    assert found.unreadable_configs == ()


def test_the_instance_type_alone_counts_an_unshared_nodes_gpus():
    _, found = _read(*_plugin(), capacity="8")
    assert (found.gpu_count, found.sharing_strategy) == (8, "none")
    assert found.unreadable_configs == ()


# An AKS MIG pool on NC24ads_A100_v4 (one A100 80GB) created with `--gpu-instance-profile MIG1g`,
# its plugin run with `--mig-strategy=mixed`: 7 nvidia.com/mig-1g.10gb, no nvidia.com/gpu, no GFD.
AKS_MIXED = {**AKS_MIG, "node.kubernetes.io/instance-type": "Standard_NC24ads_A100_v4"}
MIG_1G = "nvidia.com/mig-1g.10gb"


def _read_mixed(*plugin: dict[str, Any]):
    one = {"limits": {MIG_1G: "1"}, "requests": {MIG_1G: "1"}}
    world = [
        node(NODE, AKS_MIXED, capacity={MIG_1G: "7"}),
        *plugin,
        pod("cust-acme", "train-0", ctr("train", resources=one), node_name=NODE),
        pod("cust-globex", "train-0", ctr("train", resources=one), node_name=NODE),
    ]
    snapshot = normalise(world, configured_platform=("kube-system",))
    (found,) = snapshot.nodes
    return snapshot, found


@pytest.mark.parametrize(
    "plugin",
    [
        [],  # no plugin pod in the snapshot: the MIG resource names alone prove mixed
        _plugin(args=["--fail-on-init-error=false", "--mig-strategy=mixed"]),
    ],
)
def test_an_aks_mixed_mig_pool_without_gfd_reads_as_mig_mixed(plugin):
    snapshot, found = _read_mixed(*plugin)
    # Only the mixed strategy advertises nvidia.com/mig-*: the node is MIG, never unshared.
    assert (found.sharing_strategy, found.mig_strategy) == ("mig", "mixed")
    assert found.gpu_count == 1  # the instance type's A100, not the 7 instances
    assert _modes(snapshot, found) == {"mig_gi"}


def test_the_plugins_own_mig_strategy_is_reported_never_a_guessed_one():
    # Whole GPUs under a plugin that runs the mixed strategy: MIG is off, the strategy is the
    # plugin's; with no plugin to read the strategy stays unknown (never "single").
    _, found = _read(*_plugin(args=["--mig-strategy=mixed"]), capacity="8")
    assert (found.sharing_strategy, found.mig_strategy) == ("none", "mixed")
    _, found = _read(capacity="8")
    assert (found.sharing_strategy, found.mig_strategy) == ("none", None)
