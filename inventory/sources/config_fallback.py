"""GPU configs matched without the ClusterPolicy that names them. PURE.

The GPU Operator renders its device-plugin and MIG Manager DaemonSets from its ClusterPolicy:
the ConfigMap `devicePlugin.config.name` / `migManager.config.name` names is what they read.
DESIGN §7 does not list ClusterPolicy among a snapshot's kinds, so many exports (and peers'
worlds) hold the operator's Deployment and DaemonSets but no ClusterPolicy, and DaemonSets whose
spec names no ConfigMap (trimmed, or hand-written). Such a DaemonSet does not show which config
it reads: the ClusterPolicy would. So where no ClusterPolicy is read and no DaemonSet names a
ConfigMap, the config source is unknown and the sync falls back as docs/clusters.md describes
(as it always did where the snapshot shows no such DaemonSet at all):
any device-plugin or mig-parted config in a platform namespace may be it, each node reading
the key its `nvidia.com/device-plugin.config` label names (else the default or only key, as
the plugin would). Such a config is marked `matched` (how it was matched): it never makes a
node share GPUs its own labels and capacity do not show shared (node_fallback.py).

A standalone plugin's DaemonSet that names no ConfigMap is another matter: it is seen to run
with no config file (plugin_file.py), so it still shows that no ConfigMap is its config.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import replace

from inventory.snapshot import GpuOperatorPolicy, SharingConfig, Workload
from inventory.sources.images import component_of

PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"


def operator_readers_unnamed(
    workload: Workload, policies: Iterable[GpuOperatorPolicy], operator: Collection[str]
) -> bool:
    """The GPU Operator's own DaemonSet (in its namespace) that names no ConfigMap, with no
    readable ClusterPolicy: it does not show which config it reads (the ClusterPolicy would)."""
    return (
        workload.namespace in operator
        and not workload.config_refs
        and not any(not p.error for p in policies)
    )


def unnamed_why(workloads: Iterable[Workload], unnamed: Sequence[str]) -> str:
    """Why the config source is not read, for `matched` and the sync warning."""
    operators = sorted(
        f"Deployment {w.namespace}/{w.name}"
        for w in workloads
        if w.kind == "Deployment"
        and any(component_of(i) == "gpu_operator" for i in w.images.values())
    )
    runs = f"the GPU Operator runs ({', '.join(operators)}) but " if operators else ""
    return (
        f"{runs}no ClusterPolicy (clusterpolicies.nvidia.com) was read and "
        f"{', '.join(sorted(unnamed))} names no ConfigMap"
    )


def matched_configs(
    configs: Iterable[SharingConfig], why: str, node_keys: Collection[str]
) -> tuple[list[SharingConfig], list[str]]:
    """The device-plugin configs read by the fallback, marked with how they were matched, and
    one sync warning per ConfigMap naming the keys nodes select by label and the fallback
    key an unlabelled node's plugin would read."""
    marked: list[SharingConfig] = []
    by_map: dict[tuple[str, str], list[str]] = {}
    for config in configs:
        by_map.setdefault((config.namespace, config.configmap), []).append(config.key)
    for config in configs:
        how = _how(config.key, by_map[(config.namespace, config.configmap)], node_keys)
        marked.append(replace(config, matched=f"matched without the ClusterPolicy ({how}): {why}"))
    warnings = [
        f"ConfigMap {namespace}/{name} is taken as the device plugin's config without the "
        f"ClusterPolicy that would name it ({why}): as docs/clusters.md describes, a GPU node "
        f"reads the key its {PLUGIN_CONFIG_LABEL} label names ({_labelled(keys, node_keys)}), "
        "else the map's `default` or only key; it sets a node's sharing only where the node's "
        "own labels and capacity agree; add clusterpolicies.nvidia.com to `kubectl get`"
        for (namespace, name), keys in sorted(by_map.items())
    ]
    return marked, warnings


def mig_fallback_warnings(names: Iterable[tuple[str, str]], why: str) -> list[str]:
    """A mig-parted config read by the fallback: the one the ClusterPolicy's
    `migManager.config.name` names is not known."""
    return [
        f"ConfigMap {namespace}/{name} is taken as MIG Manager's mig-parted config without the "
        f"ClusterPolicy whose migManager.config.name would name it ({why}): a node's "
        "nvidia.com/mig.config label selects its layout there; add clusterpolicies.nvidia.com "
        "to `kubectl get`"
        for namespace, name in sorted(set(names))
    ]


def _how(key: str, keys: Sequence[str], node_keys: Collection[str]) -> str:
    if key in node_keys:
        return f"a GPU node's {PLUGIN_CONFIG_LABEL} label names key {key}"
    if key == "default" or (len(keys) == 1 and "default" not in keys):
        which = "its `default` key" if key == "default" else "the map's only key"
        return f"{which}, which an unlabelled node's plugin would read"
    return f"key {key}, which no GPU node's {PLUGIN_CONFIG_LABEL} label names"


def _labelled(keys: Sequence[str], node_keys: Collection[str]) -> str:
    named = sorted(k for k in keys if k in node_keys)
    return f"labels name key {', '.join(named)}" if named else "no node's label names a key"
