"""Drift of the device-plugin and mig-parted ConfigMaps (DRIFT-001), between two good syncs.
PURE. Compared by meaning: a config's parsed settings, a mig-parted document's parsed YAML."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from gpuposture.base.safe_parse import SafeParseError, load_yaml
from inventory import snapshot as snap
from inventory.drift_change import DriftChange
from inventory.sources.configs import MAX_ALIASES, MAX_DEPTH, MAX_VALUE_BYTES
from inventory.sources.raw import canonical_hash


def _config_key(config: snap.SharingConfig) -> tuple[str, str, str]:
    return (config.namespace, config.configmap, config.key)


def _config_view(config: snap.SharingConfig | None) -> dict[str, Any]:
    if config is None:
        return {"present": False}
    view = {
        "mode": config.mode,
        "replicas": config.replicas,
        "fail_requests_greater_than_one": config.fail_requests_greater_than_one,
        "rename_by_default": config.rename_by_default,
        # The plugin takes each resource's entry by its name: the order the YAML lists them in
        # shares no GPU differently, so it is no change.
        "resources": sorted(config.resources),
        "mig_strategy": config.mig_strategy,
        # envvar (the plugin's default when unset) lets a container name GPUs through
        # NVIDIA_VISIBLE_DEVICES; volume-mounts / cdi-* do not: a switch is an isolation change.
        "device_list_strategy": ",".join(
            sorted((config.device_list_strategy or "envvar").split(","))
        ),
    }
    if config.entries:  # rename and devices per resource (kept since issue 17)
        entries = [snap.to_dict(e) for e in config.entries]
        view["entries"] = sorted(entries, key=lambda e: json.dumps(e, sort_keys=True))
    return view


def _comparable(was: dict[str, Any], now: dict[str, Any]) -> None:
    """A config stored before its entries were kept has none to compare: not a change."""
    if "entries" not in was or "entries" not in now:
        was.pop("entries", None)
        now.pop("entries", None)


def uses_config(node: snap.Node, key: tuple[str, str, str]) -> bool:
    """Whether the node's device plugin reads the config `key`: the one the sync found in force
    on it (a plugin with no config-manager reads its one mounted file and ignores the node's
    `nvidia.com/device-plugin.config` label); by that label for a node stored before the sync
    recorded it."""
    namespace, configmap, config_key = key
    if node.device_plugin_config_used is not None:
        return node.device_plugin_config_used == f"{namespace}/{configmap}:{config_key}"
    return node.device_plugin_config == config_key


def sharing_config_changes(
    before: Iterable[snap.SharingConfig],
    after: Iterable[snap.SharingConfig],
    nodes: Iterable[snap.Node],
    nodes_before: Iterable[snap.Node] = (),
) -> list[DriftChange]:
    """Each config changed, added or removed, with the nodes it reaches: those using it now,
    or for a removed one those that used it at the last sync (they lost it)."""
    old = {_config_key(c): c for c in before}
    new = {_config_key(c): c for c in after}
    node_list, old_nodes = list(nodes), list(nodes_before)
    changes = []
    for key in sorted(old.keys() | new.keys()):
        was, now = _config_view(old.get(key)), _config_view(new.get(key))
        _comparable(was, now)
        if was == now:
            continue
        namespace, configmap, config_key = key
        fields_changed = sorted(k for k in was.keys() | now.keys() if was.get(k) != now.get(k))
        changes.append(
            DriftChange(
                "sharing_config",
                "DRIFT-001",
                "ConfigMap",
                namespace,
                configmap,
                f"device-plugin config {namespace}/{configmap} key {config_key} changed: "
                + ", ".join(fields_changed),
                before={"key": config_key, **was},
                after={"key": config_key, **now},
                nodes=tuple(
                    sorted(
                        n.name
                        for n in (node_list if key in new else old_nodes)
                        if uses_config(n, key)
                    )
                ),
            )
        )
    return changes


def mig_config_changes(
    before: Iterable[snap.ConfigMap], after: Iterable[snap.ConfigMap], nodes: Iterable[snap.Node]
) -> list[DriftChange]:
    old = {(c.namespace, c.name): c for c in before if c.purpose == "mig_parted"}
    new = {(c.namespace, c.name): c for c in after if c.purpose == "mig_parted"}
    mig_nodes = tuple(sorted(n.name for n in nodes if n.sharing_strategy == "mig"))
    changes = []
    for key in sorted(old.keys() | new.keys()):
        was, now = old.get(key), new.get(key)
        if was and now and _same_mig_layouts(was, now):
            continue
        changes.append(
            DriftChange(
                "sharing_config",
                "DRIFT-001",
                "ConfigMap",
                key[0],
                key[1],
                f"MIG partitioning config {key[0]}/{key[1]} changed",
                before=_configmap_view(was),
                after=_configmap_view(now),
                nodes=mig_nodes,
            )
        )
    return changes


def _same_mig_layouts(was: snap.ConfigMap, now: snap.ConfigMap) -> bool:
    """Same bytes, or the same mig-parted documents: a comment, a blank line, key order or
    flow style (`{"1g.10gb": 7}`) changes the hash, not one partition. A key other than the
    mig-parted ones (kept in `data`) is no MIG config; without kept texts the hash decides."""
    if was.data_hash == now.data_hash:
        return True
    if not was.data or not now.data:
        return False
    return _parsed(was.data) == _parsed(now.data)


def _parsed(texts: dict[str, str]) -> dict[str, str] | None:
    """key -> canonical hash of its parsed YAML; None when one no longer parses (a change)."""
    try:
        return {
            key: canonical_hash(
                load_yaml(
                    value, max_bytes=MAX_VALUE_BYTES, max_depth=MAX_DEPTH, max_aliases=MAX_ALIASES
                )
            )
            for key, value in texts.items()
        }
    except SafeParseError:
        return None


def _configmap_view(config: snap.ConfigMap | None) -> dict[str, Any]:
    if config is None:
        return {"present": False}
    return {"keys": list(config.keys), "sha256": config.data_hash}
