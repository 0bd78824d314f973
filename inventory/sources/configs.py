"""ConfigMaps that configure GPU sharing: NVIDIA device-plugin configs and mig-parted configs.

Only these are kept. Every other ConfigMap may carry credentials or private settings, so it is
counted and dropped without storing anything from it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import yaml

from inventory.snapshot import ConfigMap, SharingConfig
from inventory.sources.raw import as_int, canonical_hash, dicts, dig, flag, mapping, text

DEVICE_PLUGIN = "device_plugin"
MIG_PARTED = "mig_parted"

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


def read_configmap(namespace: str, name: str, data: Any) -> ConfigMapResult:
    """Recognise a device-plugin or mig-parted ConfigMap from its `data`; anything else gives
    an empty result. Broken YAML never raises: it becomes a warning."""
    data = mapping(data)
    warnings: list[str] = []
    plugin_configs: dict[str, dict[str, Any]] = {}
    mig_parted_texts: dict[str, str] = {}
    for key in sorted(data, key=str):
        parsed, warning = _parse_value(namespace, name, str(key), data[key])
        if warning:
            warnings.append(warning)
        if _is_device_plugin_config(parsed):
            plugin_configs[str(key)] = parsed
        elif _is_mig_parted_config(parsed):
            mig_parted_texts[str(key)] = data[key]
    if not plugin_configs and not mig_parted_texts:
        return ConfigMapResult(warnings=tuple(warnings))
    configmap = ConfigMap(
        namespace=namespace,
        name=name,
        purpose=DEVICE_PLUGIN if plugin_configs else MIG_PARTED,
        keys=tuple(sorted(str(k) for k in data)),
        data_hash=canonical_hash(data),
        data={} if plugin_configs else mig_parted_texts,
    )
    sharing = tuple(
        sharing_config(namespace, name, key, cfg) for key, cfg in plugin_configs.items()
    )
    return ConfigMapResult(configmap, sharing, tuple(warnings))


def _parse_value(namespace: str, name: str, key: str, value: Any) -> tuple[Any, str | None]:
    if not isinstance(value, str):
        return None, None
    if not _MAY_BE_MAPPING.search(value):
        # Not a YAML mapping (no `:`, `{` or `?` anywhere), so neither kind of config nor a
        # broken one: skip parsing it (every namespace's kube-root-ca.crt lands here).
        return None, None
    try:
        return yaml.safe_load(value), None
    except yaml.YAMLError as exc:
        if not _CONFIG_HINT.search(value):
            return None, None
        problem = str(exc).splitlines()[0]
        return None, (
            f"ConfigMap {namespace}/{name} key {key!r} looks like a GPU sharing config but is "
            f"not valid YAML ({problem}); it was ignored, so its sharing settings are unknown"
        )


def _is_device_plugin_config(parsed: Any) -> bool:
    if not isinstance(parsed, dict):
        return False
    flags = parsed.get("flags")
    return "sharing" in parsed or (isinstance(flags, dict) and "migStrategy" in flags)


def _is_mig_parted_config(parsed: Any) -> bool:
    return isinstance(parsed, dict) and "version" in parsed and "mig-configs" in parsed


def sharing_config(namespace: str, configmap: str, key: str, cfg: dict[str, Any]) -> SharingConfig:
    """One device-plugin config (a ConfigMap key) -> its sharing mode and settings."""
    sharing = mapping(cfg.get("sharing"))
    time_slicing = mapping(sharing.get("timeSlicing"))
    mps = mapping(sharing.get("mps"))
    if dicts(time_slicing.get("resources")):
        mode, section = "time_slicing", time_slicing
    elif dicts(mps.get("resources")):
        mode, section = "mps", mps
    else:
        mode, section = "none", time_slicing
    resources = dicts(section.get("resources")) if mode != "none" else []
    replicas = [n for r in resources if (n := as_int(r.get("replicas"))) is not None]
    return SharingConfig(
        namespace=namespace,
        configmap=configmap,
        key=key,
        mode=mode,
        replicas=max(replicas) if replicas else None,
        fail_requests_greater_than_one=flag(section.get("failRequestsGreaterThanOne")) is True,
        rename_by_default=flag(section.get("renameByDefault")) is True,
        resources=tuple(name for r in resources if (name := text(r.get("name")))),
        mig_strategy=text(mapping(cfg.get("flags")).get("migStrategy")),
        device_list_strategy=_device_list_strategy(
            dig(cfg, "flags", "plugin").get("deviceListStrategy")
        ),
    )


def _device_list_strategy(value: object) -> str | None:
    # The plugin takes one strategy or a list of them (e.g. ["envvar", "cdi-annotations"]).
    if isinstance(value, list):
        names = [v.strip() for v in value if isinstance(v, str) and v.strip()]
        return ",".join(names) or None
    return text(value)
