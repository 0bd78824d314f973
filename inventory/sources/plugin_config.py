"""Which device-plugin config a node's plugin reads. PURE.

The plugin's config-manager takes the key the node's `nvidia.com/device-plugin.config` label
names, else its `DEFAULT_CONFIG` (the standalone chart's `config.default`, the GPU Operator's
ClusterPolicy `devicePlugin.config.default`), else its fallbacks (a key named "default", else
the only key). A plugin running without config-manager reads one mounted file and no label
(plugin_file.py; file_config here).
"""

from __future__ import annotations

from collections.abc import Sequence

from inventory.snapshot import SharingConfig, UnreadableConfig
from inventory.sources.plugin_file import PluginFile, PluginReading
from inventory.visible_devices import Fact

NV = "nvidia.com/"
PLUGIN_CONFIG, MIG_CONFIG = NV + "device-plugin.config", NV + "mig.config"


def matching_config(
    label: str | None, configs: Sequence[SharingConfig]
) -> tuple[SharingConfig | None, str | None]:
    """The device-plugin config a node labelled `label` (nvidia.com/device-plugin.config) uses,
    only when that is unambiguous; with a warning when it is defined differently twice."""
    if label:
        matches = [c for c in configs if c.key == label]
        if len({c.mode for c in matches}) > 1:
            names = ", ".join(sorted(f"{c.namespace}/{c.configmap}" for c in matches))
            return None, (
                f"device-plugin config {label!r} is defined differently in {names}; "
                "the node's sharing mode is taken from its labels only"
            )
        return (matches[0] if matches else None), None
    return _default_config(configs), None


def unreadable_for(
    labels: dict[str, str],
    configs: Sequence[SharingConfig],
    unreadable: Sequence[UnreadableConfig],
    named: str | None = None,
) -> tuple[UnreadableConfig, ...]:
    """The unreadable GPU configuration a GPU node uses: the device-plugin config its label
    (else the explicit default, `named`) names, else the one the plugin falls back to, the
    mig-parted config when MIG Manager manages it (it has a layout label), and the operator's
    ClusterPolicy."""
    label = named or labels.get(PLUGIN_CONFIG)
    fallback = _fallback_key(configs, unreadable) if not label else None
    found = []
    for problem in unreadable:
        if problem.purpose == "device_plugin":
            concerns = problem.key in (label, fallback) or not problem.key
        else:
            concerns = problem.purpose == "gpu_operator" or MIG_CONFIG in labels
        if concerns:
            found.append(problem)
    return tuple(found)


def _fallback_key(
    configs: Sequence[SharingConfig], unreadable: Sequence[UnreadableConfig]
) -> str | None:
    """The key an unlabelled node's plugin reads when the cluster has one device-plugin
    ConfigMap (the rule of _default_config, with unreadable keys counted as keys)."""
    plugin = [p for p in unreadable if p.purpose == "device_plugin"]
    maps = {(c.namespace, c.configmap) for c in configs} | {(p.namespace, p.name) for p in plugin}
    keys = {c.key for c in configs} | {p.key for p in plugin}
    if len(maps) != 1:
        return None
    if "default" in keys:
        return "default"
    return next(iter(keys)) if len(keys) == 1 else None


def _default_config(configs: Sequence[SharingConfig]) -> SharingConfig | None:
    # The device plugin's fallbacks: a config named "default", else the only config. We apply
    # them only when the cluster has a single device-plugin ConfigMap; with several we cannot
    # know which one the plugin was given.
    if len({(c.namespace, c.configmap) for c in configs}) != 1:
        return None
    named = [c for c in configs if c.key == "default"]
    if named:
        return named[0]
    return configs[0] if len(configs) == 1 else None


def file_config(
    file: PluginFile,
    configs: Sequence[SharingConfig],
    unreadable: Sequence[UnreadableConfig],
) -> tuple[SharingConfig | None, tuple[UnreadableConfig, ...]]:
    """The config a plugin with no config-manager reads (one ConfigMap key, plugin_file), and
    what makes it unknown. A ConfigMap the snapshot does not hold as a device-plugin config (it
    holds no sharing, or was not read) says nothing either way: the node's labels and capacity
    decide, as with no config at all."""
    where = (file.namespace, file.configmap)
    for config in configs:
        if (config.namespace, config.configmap, config.key) == (*where, file.key):
            return config, ()
    plugin = [p for p in unreadable if p.purpose == "device_plugin" and p.kind == "ConfigMap"]
    problems = tuple(
        p for p in plugin if (p.namespace, p.name) == where and p.key in (file.key, "")
    )
    if problems:
        return None, problems
    known = {(c.namespace, c.configmap) for c in configs} | {(p.namespace, p.name) for p in plugin}
    if where not in known:
        return None, ()
    error = (
        f"{file.source}, which the ConfigMap does not have: the plugin cannot load it (a "
        "running one keeps the config it had), so the node's sharing is unknown"
    )
    return None, (UnreadableConfig("ConfigMap", *where, file.key, "device_plugin", error),)


def config_basis(
    reading: PluginReading,
    label: str | None,
    config: SharingConfig | None,
    mig: Fact | None,
) -> str:
    """What a GPU node's sharing basis says of its device-plugin config where the node's label
    is not what chose it: the plugin reads no label (its file is in force, or none: whole
    GPUs), or the plugin that would read it is not shown, so the config the label names is not
    known to be in force. "" where a config-manager reads the label, or no label is at stake
    (a default or fallback config taken with the plugin unseen stays as it was, unremarked)."""
    if reading.label_read is False and label:
        ignored = f"ignores the node's label {PLUGIN_CONFIG}={label} (only config-manager reads it)"
        if reading.file is not None:
            in_force = f"config {config.ref} in force" if config is not None else "no sharing"
            return f"{in_force}: {reading.file.source}, and runs no config-manager, so it {ignored}"
        strategy = f" (MIG devices by its MIG strategy {mig.value})" if mig and mig.value else ""
        return (
            f"no device-plugin config in force: {reading.bare} runs with no config file and no "
            f"config-manager, so it serves whole GPUs{strategy} as its flags and env say and "
            f"{ignored}"
        )
    if reading.unseen and config is not None and label and config.key == label:
        return (
            f"config {config.ref} taken as in force (the node's label {PLUGIN_CONFIG}={label} "
            f"names it), unverified: {reading.unseen}, so whether config-manager (the only "
            "reader of that label) runs there is not known"
        )
    return ""
