"""ConfigMaps that configure GPU sharing: NVIDIA device-plugin configs, mig-parted configs and
the vGPU Device Manager's configs (the vGPU types each GPU of a vm-vgpu node is split into).

Only these are kept. Every other ConfigMap may carry credentials or private settings, so it is
counted and dropped without storing anything from it. Which ConfigMaps may be GPU configuration
at all (the GPU stack's own, in platform namespaces) is decided in gpu_config.py.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from gpuposture.base.safe_parse import SafeParseError, load_yaml
from inventory.snapshot import ConfigMap, SharingConfig, SharingEntry, UnreadableConfig
from inventory.sources.plugin_entries import entry_problems
from inventory.sources.raw import as_int, canonical_hash, dicts, dig, flag, mapping, text

DEVICE_PLUGIN = "device_plugin"
MIG_PARTED = "mig_parted"
# Kept as a ConfigMap (its keys and hash, not its text): how each GPU is split between VMs is
# read from the node's labels; the ConfigMap is what a tenant must not be able to write.
VGPU_DEVICE_MANAGER = "vgpu_device_manager"
PURPOSES = (DEVICE_PLUGIN, MIG_PARTED, VGPU_DEVICE_MANAGER)
_LABELS = {DEVICE_PLUGIN: "device-plugin config", MIG_PARTED: "mig-parted config"}

# Limits for one value (checked before parsing, gpuposture.base.safe_parse): Kubernetes caps a
# whole ConfigMap at 1 MiB; real configs nest under 10 levels and use no aliases, and eight
# aliases can at most repeat a value about twenty times.
MAX_VALUE_BYTES = 1024 * 1024
MAX_DEPTH = 64
MAX_ALIASES = 8

# Text that suggests a value was meant as a sharing or MIG config. A value that fails to parse is
# reported only when it looks like one: most ConfigMaps hold scripts that are not YAML at all.
_CONFIG_HINT = re.compile(r"\b(sharing|timeSlicing|mps|mig-configs|migStrategy)\s*:")
# A YAML mapping needs one of its indicators: `key: value`, a flow `{...}` or an explicit `? key`.
_MAY_BE_MAPPING = re.compile(r"[:{?]")


@dataclass(frozen=True)
class ConfigMapResult:
    """What one ConfigMap contributes to the snapshot."""

    configmap: ConfigMap | None = None
    sharing_configs: tuple[SharingConfig, ...] = ()
    warnings: tuple[str, ...] = ()


def read_configmap(
    namespace: str,
    name: str,
    data: Any,
    *,
    purposes: Collection[str] = PURPOSES,
    stated: str | None = None,
) -> ConfigMapResult:
    """Recognise a device-plugin or mig-parted ConfigMap (of the `purposes` allowed) from its
    `data`; anything else gives an empty result. `stated` is the purpose the GPU Operator's
    ClusterPolicy gives this ConfigMap: then every key is a config of it. A value that cannot
    be read (too large, too deep, not YAML) never raises: when it is or looks like a config it
    is kept as unreadable, so the nodes using it say so (STACK-007)."""
    data = mapping(data)
    if stated == VGPU_DEVICE_MANAGER and stated in purposes:
        return ConfigMapResult(_vgpu_configmap(namespace, name, data))
    plugin_configs: dict[str, dict[str, Any]] = {}
    mig_parted_texts: dict[str, str] = {}
    unreadable: dict[str, tuple[str, str]] = {}  # key -> (purpose, error)
    plain_configs: dict[str, dict[str, Any]] = {}
    for key in sorted(data, key=str):
        value = data[key]
        try:
            parsed = _parse_value(value)
        except SafeParseError as exc:
            purpose = stated or _looks_like(value)
            if purpose in purposes:
                unreadable[str(key)] = (purpose, str(exc))
            continue
        if DEVICE_PLUGIN in purposes and _is_device_plugin_config(parsed):
            if problems := entry_problems(parsed):
                unreadable[str(key)] = (DEVICE_PLUGIN, "; ".join(problems[:5]))
                continue
            plugin_configs[str(key)] = parsed
        elif MIG_PARTED in purposes and _is_mig_parted_config(parsed):
            mig_parted_texts[str(key)] = value
        elif DEVICE_PLUGIN in purposes and _is_plain_plugin_config(parsed, stated):
            plain_configs[str(key)] = parsed
    if plain_configs and (plugin_configs or stated == DEVICE_PLUGIN):
        # `version: v1` alone (or with flags other than the MIG strategy), the usual "no
        # sharing" entry: in a device-plugin ConfigMap it is a key the config-manager selects
        # like any other, and it means whole GPUs. Alone in some other ConfigMap it is nothing.
        plugin_configs = dict(sorted((plugin_configs | plain_configs).items()))
    if not plugin_configs and not mig_parted_texts and not unreadable:
        if VGPU_DEVICE_MANAGER in purposes and any(_is_vgpu_config(v) for v in data.values()):
            return ConfigMapResult(_vgpu_configmap(namespace, name, data))
        return ConfigMapResult()
    plugin = bool(plugin_configs) or any(p == DEVICE_PLUGIN for p, _ in unreadable.values())
    configmap = ConfigMap(
        namespace=namespace,
        name=name,
        purpose=DEVICE_PLUGIN if plugin else MIG_PARTED,
        keys=tuple(sorted(str(k) for k in data)),
        data_hash=canonical_hash(data),
        data={} if plugin else mig_parted_texts,
        unreadable={key: error for key, (_, error) in unreadable.items()},
    )
    sharing = tuple(
        sharing_config(namespace, name, key, cfg) for key, cfg in plugin_configs.items()
    )
    warnings = tuple(
        f"ConfigMap {namespace}/{name} key {key!r} ({_LABELS[purpose]}) could not be read: "
        f"{error}; the settings it holds are unknown (STACK-007 on the nodes it configures)"
        for key, (purpose, error) in unreadable.items()
    )
    return ConfigMapResult(configmap, sharing, warnings)


def _vgpu_configmap(namespace: str, name: str, data: dict[str, Any]) -> ConfigMap:
    return ConfigMap(
        namespace=namespace,
        name=name,
        purpose=VGPU_DEVICE_MANAGER,
        keys=tuple(sorted(str(k) for k in data)),
        data_hash=canonical_hash(data),
    )


def _is_vgpu_config(value: Any) -> bool:
    """A vGPU Device Manager config (`version: v1` and `vgpu-configs:`), told by its text
    before parsing: most ConfigMaps of a platform namespace are something else."""
    if not isinstance(value, str) or "vgpu-configs" not in value:
        return False
    try:
        parsed = _parse_value(value)
    except SafeParseError:
        return False
    return isinstance(parsed, dict) and isinstance(parsed.get("vgpu-configs"), dict)


def unreadable_configs(configmap: ConfigMap) -> list[UnreadableConfig]:
    """The unreadable keys of a kept ConfigMap, as facts for the nodes they configure."""
    return [
        UnreadableConfig(
            "ConfigMap", configmap.namespace, configmap.name, key, configmap.purpose, error
        )
        for key, error in sorted(configmap.unreadable.items())
    ]


def _parse_value(value: Any) -> Any:
    if not isinstance(value, str):
        return None
    if not _MAY_BE_MAPPING.search(value):
        # Not a YAML mapping (no `:`, `{` or `?` anywhere), so neither kind of config nor a
        # broken one: skip parsing it (every namespace's kube-root-ca.crt lands here).
        return None
    return load_yaml(value, max_bytes=MAX_VALUE_BYTES, max_depth=MAX_DEPTH, max_aliases=MAX_ALIASES)


def _looks_like(value: Any) -> str | None:
    """Which config a value that cannot be parsed was meant to be, from its text."""
    match = _CONFIG_HINT.search(value) if isinstance(value, str) else None
    if match is None:
        return None
    return MIG_PARTED if match.group(1) == "mig-configs" else DEVICE_PLUGIN


def _is_device_plugin_config(parsed: Any) -> bool:
    if not isinstance(parsed, dict):
        return False
    flags = parsed.get("flags")
    return "sharing" in parsed or (isinstance(flags, dict) and "migStrategy" in flags)


def _is_plain_plugin_config(parsed: Any, stated: str | None) -> bool:
    # In a ConfigMap the ClusterPolicy names as the plugin's, every mapping is a config.
    return isinstance(parsed, dict) and ("version" in parsed or stated == DEVICE_PLUGIN)


def _is_mig_parted_config(parsed: Any) -> bool:
    return isinstance(parsed, dict) and "version" in parsed and "mig-configs" in parsed


def sharing_config(namespace: str, configmap: str, key: str, cfg: dict[str, Any]) -> SharingConfig:
    """One device-plugin config (a ConfigMap key) -> its sharing mode and settings. MPS wins
    when both sections list resources, as in the device plugin (Sharing.SharingStrategy)."""
    sharing = mapping(cfg.get("sharing"))
    time_slicing = mapping(sharing.get("timeSlicing"))
    mps = mapping(sharing.get("mps"))
    if dicts(mps.get("resources")):
        mode, section = "mps", mps
    elif dicts(time_slicing.get("resources")):
        mode, section = "time_slicing", time_slicing
    else:
        mode, section = "none", time_slicing
    entries = tuple(_entry(r) for r in dicts(section.get("resources"))) if mode != "none" else ()
    entries = tuple(e for e in entries if e.name)
    replicas = [e.replicas for e in entries if e.replicas is not None]
    return SharingConfig(
        namespace=namespace,
        configmap=configmap,
        key=key,
        mode=mode,
        replicas=max(replicas) if replicas else None,
        fail_requests_greater_than_one=flag(section.get("failRequestsGreaterThanOne")) is True,
        rename_by_default=flag(section.get("renameByDefault")) is True,
        resources=tuple(e.name for e in entries),
        mig_strategy=text(mapping(cfg.get("flags")).get("migStrategy")),
        device_list_strategy=_device_list_strategy(
            dig(cfg, "flags", "plugin").get("deviceListStrategy")
        ),
        entries=entries,
    )


def _entry(raw: dict[str, Any]) -> SharingEntry:
    """One replicated resource: `devices` is "all" (the default), a count of the first devices,
    or a list of GPU indices, MIG indices ("0:1") or UUIDs."""
    devices = raw.get("devices")
    listed = tuple(d for item in devices if (d := text(item))) if isinstance(devices, list) else ()
    count = as_int(devices) if not isinstance(devices, list | str | bool) else None
    return SharingEntry(
        name=plugin_resource_name(text(raw.get("name"), "") or ""),
        rename=plugin_resource_name(text(raw.get("rename")) or "") or None,
        replicas=as_int(raw.get("replicas")),
        devices=listed,
        device_count=count if count and count > 0 else None,
    )


def plugin_resource_name(name: str) -> str:
    """A resource name as the device plugin reads it from its config: a bare name (`gpu`,
    `tenant-slice`) gets its `nvidia.com/` prefix (the plugin's NewResourceName), so a config
    saying `rename: tenant-slice` advertises `nvidia.com/tenant-slice`. A name with a prefix is
    kept as written ("" stays "")."""
    name = name.strip()
    return f"nvidia.com/{name}" if name and "/" not in name else name


def _device_list_strategy(value: object) -> str | None:
    # The plugin takes one strategy or a list of them (e.g. ["envvar", "cdi-annotations"]).
    if isinstance(value, list):
        names = [v.strip() for v in value if isinstance(v, str) and v.strip()]
        return ",".join(names) or None
    return text(value)
