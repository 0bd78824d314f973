"""A device-plugin sharing config outside the platform namespaces that a GPU node's
`nvidia.com/device-plugin.config` label selects, in a snapshot that shows no device plugin
reading a config and no ClusterPolicy naming one. PURE.

Only ConfigMaps the GPU stack is seen to use are its configuration (gpu_config.py). But a
snapshot may simply lack the plugin's DaemonSet (its namespace not listed, the chart's pods
gone for a while): then a ConfigMap whose key the node's label names and whose content
time-slices or shares GPUs through MPS is most likely the one the plugin will read. Failing
closed, it is kept as the device plugin's ConfigMap, so whoever may write it is judged (K8S-004,
checklist item 7). It does not decide how the node shares its GPUs (its labels do): a ConfigMap
nobody is seen to read is evidence of who may steer sharing, not of what the node runs. One in
a tenant's namespace is the tenant's own and never counted.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

from inventory.snapshot import ConfigMap
from inventory.sources.configs import DEVICE_PLUGIN, read_configmap
from inventory.sources.raw import dig

PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
SHARING_MODES = ("time_slicing", "mps")


def node_config_keys(raw_nodes: Iterable[dict[str, Any]]) -> frozenset[str]:
    """The device-plugin config keys GPU nodes' labels select."""
    return frozenset(
        key
        for node in raw_nodes
        if (key := str(dig(node, "metadata", "labels").get(PLUGIN_CONFIG_LABEL) or "").strip())
    )


def unmounted_plugin_configmaps(
    configmaps: Iterable[Any],
    *,
    keys: Collection[str],
    skipped: Collection[str],
) -> tuple[list[ConfigMap], list[str]]:
    """The ConfigMaps (RawConfigMap) outside the `skipped` namespaces (the platform's, whose
    ConfigMaps are read already, and the tenants') with a sharing config under a key in
    `keys`, and a warning for each saying why it is counted."""
    found: list[ConfigMap] = []
    warnings: list[str] = []
    for raw in configmaps:
        if raw.namespace in skipped or not keys:
            continue
        data = raw.data if isinstance(raw.data, dict) else {}
        if not set(map(str, data)) & set(keys):
            continue  # no key a node selects: not parsed at all
        read = read_configmap(raw.namespace, raw.name, data, purposes=(DEVICE_PLUGIN,))
        selected = sorted(
            c.key for c in read.sharing_configs if c.key in keys and c.mode in SHARING_MODES
        )
        if read.configmap is None or not selected:
            continue
        found.append(read.configmap)
        warnings.append(
            f"ConfigMap {raw.namespace}/{raw.name} is taken as the device plugin's config "
            f"(who may write it is judged, K8S-004): its key {', '.join(selected)} shares GPUs "
            f"and a GPU node's {PLUGIN_CONFIG_LABEL} label selects it, and the snapshot shows "
            "no device plugin in a platform namespace reading a config and no ClusterPolicy "
            "naming one"
        )
    return found, warnings
