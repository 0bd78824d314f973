"""Whether a device-plugin config matched without the ClusterPolicy (config_fallback) is taken
as in force on a node. PURE.

Such a config was picked by the node's label (or the default / only key) among the platform's
ConfigMaps, not because the GPU stack is seen to name it: it may be a stray or stale one. So it
never makes a node share GPUs by itself: a sharing config is kept only where the node's own
labels and capacity (GFD's sharing labels, more `nvidia.com/gpu` than GPUs) show the same
mode; a config that shares nothing is kept as it is (it invents nothing).
"""

from __future__ import annotations

from inventory.snapshot import SharingConfig
from inventory.sources.node_sharing import sharing_strategy

SHARING_MODES = ("time_slicing", "mps")


def agreed_fallback(
    config: SharingConfig | None, labels: dict[str, str], capacity: dict[str, int]
) -> tuple[SharingConfig | None, str]:
    """The config the node keeps, and what its sharing basis says of a matched one ("" for a
    config the GPU stack names, or none)."""
    if config is None or not config.matched:
        return config, ""
    if config.mode not in SHARING_MODES:
        return config, f"config {config.ref} taken as in force, {config.matched}"
    own = sharing_strategy(labels, capacity, None)
    if own == config.mode:
        return config, f"config {config.ref} taken as in force, {config.matched}"
    mode = config.mode.replace("_", "-")
    return None, (
        f"config {config.ref} not taken as in force: it was {config.matched}, and the node's "
        f"own labels and capacity do not show its GPUs shared by {mode} (they read {own})"
    )
