"""One cause, one DRIFT-001 (DESIGN §5: a finding is the thing one action changes). PURE.

An edit of a device-plugin config reaches every GPU node that reads it: the config's change
names those nodes (`nodes`), so a node whose sharing facts changed only because that config
changed is not reported again on its own. Reporting it per node made one edit N findings, each
counting against the node's tenants, so risk grew with the size of the pool.

A node stays its own DRIFT-001 when something of its own changed: it reads another config
(relabelled, `device_plugin_config`), its MIG layout label (`mig_config`), or a fact the config
does not say (GFD relabelling the node with no config change, or saying other than the config
now does). A node that joined a pool with another sharing configuration (a pool template
switch) is a new node and is never folded here. A mig-parted ConfigMap's change names every
MIG node, not the ones whose layout it changed, so it explains no node's change.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from inventory.drift_change import DriftChange

# Node fact -> the device-plugin config field that decides it (inventory.drift_configs view).
CONFIG_DECIDED = {
    "sharing_strategy": "mode",
    "time_slicing_replicas": "replicas",
    "mig_strategy": "mig_strategy",
}
_SHARED_MODES = ("time_slicing", "mps")


def without_restated(
    changes: Iterable[DriftChange], nodes_before: Collection[str]
) -> list[DriftChange]:
    """The changes, less the nodes' DRIFT-001 that a device-plugin config change among them
    explains.

    `nodes_before`: the nodes of the last sync (a node not among them joined, and its change
    compares it with its pool, not with a config)."""
    changes = list(changes)
    configs = [c for c in changes if _is_plugin_config(c)]
    return [
        change
        for change in changes
        if not (
            change.check_id == "DRIFT-001"
            and change.subject_kind == "Node"
            and change.subject_name in nodes_before
            and any(_explains(config, change) for config in configs)
        )
    ]


def _is_plugin_config(change: DriftChange) -> bool:
    """A device-plugin config's DRIFT-001 (inventory.drift_configs.sharing_config_changes):
    both sides carry the config key its nodes read."""
    return (
        change.check_id == "DRIFT-001"
        and change.subject_kind == "ConfigMap"
        and "key" in change.before
        and "key" in change.after
    )


def _explains(config: DriftChange, node: DriftChange) -> bool:
    """The node reads the changed config (it is among the config's nodes), every fact that
    changed on it is one the config decides, and where the config now states a value the node
    agrees with it."""
    if node.subject_name not in config.nodes:
        return False
    changed = set(node.before) | set(node.after)
    if not changed or not changed <= CONFIG_DECIDED.keys():
        return False
    return all(_agrees(fact, node.after.get(fact), config.after) for fact in changed)


def _agrees(fact: str, value: Any, config: Mapping[str, Any]) -> bool:
    stated = config.get(CONFIG_DECIDED[fact])
    if stated is None:  # the config says nothing of it (removed, or left to the default)
        return True
    if fact == "sharing_strategy":
        # A config of mode none leaves the node unshared by the plugin (whole GPUs or MIG).
        return value == stated if stated in _SHARED_MODES else value not in _SHARED_MODES
    return bool(value == stated)
