"""A node that advertises more `nvidia.com/gpu` than it has GPUs, where no GFD label says how
its GPUs are split. PURE.

More `nvidia.com/gpu` than physical GPUs means the device plugin splits them: MIG's single
strategy advertises each MIG instance as `nvidia.com/gpu` (AKS MIG node pools: the pool's
`gpuInstanceProfile` partitions the GPUs and the plugin runs `--mig-strategy=single`), while
time-slicing and MPS advertise each replica. GPU Feature Discovery's labels (`nvidia.com/
mig.strategy`, a `-MIG-` product) tell the two apart; where GFD does not run, only the plugin's
own MIG strategy does (flag `--mig-strategy`, env `MIG_STRATEGY`, the standalone chart's
`migStrategy`, config `flags.migStrategy`; its default is `none`):

- `single`: the GPUs are MIG instances, each `nvidia.com/gpu` its own GPU instance;
- `none` or `mixed` (under mixed MIG devices get `nvidia.com/mig-*` names): the surplus is
  replicas, time-slicing or MPS (node_sharing.sharing_strategy);
- no plugin to read (a host-run plugin, a managed cloud's own): the node's sharing is unknown
  with the reason. Never exclusive: its GPUs are split one way or the other.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from inventory.snapshot import CAPACITY_KIND, SharingConfig, UnreadableConfig
from inventory.visible_devices import Fact

NV = "nvidia.com/"
GPU = NV + "gpu"
# GFD labels that say how the node's GPUs are shared or split: with any of them, GFD decides.
_GFD_SAYS = tuple(
    NV + label
    for label in (
        "gpu.count",
        "gpu.product",
        "mig.strategy",
        "gpu.sharing-strategy",
        "gpu.replicas",
    )
)
PLUGIN_DEFAULT_MIG = "none"


@dataclass(frozen=True)
class Split:
    sharing: str  # "mig" or "unknown"
    mig_strategy: str | None  # the plugin's, where it says "single"
    problem: UnreadableConfig | None  # why it is unknown


def capacity_split(
    labels: Mapping[str, str],
    capacity: Mapping[str, int],
    physical: int | None,
    config: SharingConfig | None,
    plugin_mig: Fact | None,
) -> Split | None:
    """How a node whose `nvidia.com/gpu` exceeds its physical count splits its GPUs, where GFD
    does not say: MIG (the plugin's single strategy), unknown (no plugin to read), or None when
    the surplus is replicas (the plugin's strategy is none or mixed) or nothing is split."""
    advertised = capacity.get(GPU) or 0
    if not physical or advertised <= physical or any(k in labels for k in _GFD_SAYS):
        return None
    if config is not None and config.mode in ("time_slicing", "mps"):
        return None  # the config in force replicates: sharing_strategy reads it
    if config is not None and config.mig_strategy:
        strategy = Fact(config.mig_strategy.strip().lower(), _config_where(config))
    else:
        strategy = plugin_mig
    if strategy is None:
        return Split("unknown", None, _unknown(advertised, physical))
    if (strategy.value or PLUGIN_DEFAULT_MIG) == "single":
        return Split("mig", "single", None)
    return None


def _config_where(config: SharingConfig) -> str:
    return f"device-plugin config {config.namespace}/{config.configmap} key {config.key}"


def _unknown(advertised: int, physical: int) -> UnreadableConfig:
    return UnreadableConfig(
        CAPACITY_KIND,
        "",
        GPU,
        "",
        "device_plugin",
        f"unverified: the node advertises {advertised} {GPU} for its {physical} physical GPUs, "
        "so its GPUs are split, by MIG (the device plugin's single strategy advertises each MIG "
        "instance as nvidia.com/gpu) or by time-slicing or MPS replicas; no GPU Feature "
        "Discovery label and no device-plugin pod on the node shows which, so the node's "
        "sharing is unknown (never exclusive)",
    )
