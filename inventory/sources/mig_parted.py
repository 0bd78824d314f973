"""Parse NVIDIA mig-parted configuration (`version: v1`, `mig-configs:`) into frozen facts.

Pure: no Django, no network. Input comes from a dict, YAML text, or a ConfigMap whose `data`
holds the YAML as a string (the GPU Operator's `default-mig-parted-config` uses `config.yaml`).
Validation mirrors mig-parted's own (api/spec/v1/spec.go), so a config it would refuse is refused
here with a message that says which config, entry and field is wrong.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from gpuposture.base.safe_parse import SafeParseError, load_yaml

MAX_YAML_BYTES = 1024 * 1024  # the Kubernetes limit for a whole ConfigMap
# Checked before parsing (gpuposture.base.safe_parse): real configs nest under 10 levels.
MAX_YAML_DEPTH = 64
MAX_YAML_ALIASES = 8
# YAML aliases let a small document reference one list thousands of times; these caps keep a
# hostile document from costing more than a real one (the default config has ~100 entries).
MAX_ENTRIES = 10_000
MAX_LIST_ITEMS = 1024

SUPPORTED_VERSION = "v1"
ALL_DEVICES = "all"

_TOP_LEVEL_KEYS = frozenset({"version", "mig-configs"})
_ENTRY_KEYS = frozenset({"devices", "mig-enabled", "mig-devices", "device-filter"})
# "1g.10gb", "1c.2g.10gb", "1g.10gb+me", "1g.24gb-me", "1g.24gb+me.all", "2g.48gb+gfx".
_PROFILE = re.compile(r"^(?:\d+c\.)?(?P<g>\d+)g\.\d+gb(?:[+-][A-Za-z0-9.,+-]+)?$")


class MigPartedError(ValueError):
    """The input is not a mig-parted v1 config; the message says where and why."""


@dataclass(frozen=True, slots=True)
class MigPartedEntry:
    devices: str | tuple[int, ...]  # "all" or GPU indices
    mig_enabled: bool
    mig_devices: dict[str, int] = field(hash=False)  # profile name -> instance count
    device_filter: tuple[str, ...] = ()  # PCI ids as written, e.g. "0x233010DE"; () = any GPU

    def applies_to(self, device_id: str, index: int) -> bool:
        """Whether mig-parted applies this entry to GPU number `index` with PCI id `device_id`."""
        if self.devices != ALL_DEVICES and index not in self.devices:
            return False
        return not self.device_filter or any(
            _device_matches(f, device_id) for f in self.device_filter
        )

    @property
    def gpu_instance_slices(self) -> int:
        """GPU-instance slices the layout takes: each profile's `Ng` times its count
        (7 fill an A100/H100-class GPU, 4 an A30)."""
        return sum(profile_slices(name) * count for name, count in self.mig_devices.items())


@dataclass(frozen=True, slots=True)
class MigPartedConfig:
    version: str
    configs: dict[str, tuple[MigPartedEntry, ...]] = field(hash=False)


def parse_mig_parted(data: Any) -> MigPartedConfig:
    """A mig-parted config from its decoded form; MigPartedError when mig-parted would refuse it."""
    if not isinstance(data, dict):
        raise MigPartedError(f"a mig-parted config is a mapping, not {_kind(data)}")
    if "version" not in data:
        raise MigPartedError("missing 'version' (mig-parted configs start with 'version: v1')")
    version = data["version"]
    if version != SUPPORTED_VERSION:
        raise MigPartedError(f"unsupported version {version!r}: only {SUPPORTED_VERSION!r} exists")
    unknown = sorted(str(k) for k in data if k not in _TOP_LEVEL_KEYS)
    if unknown:
        raise MigPartedError(f"unexpected top-level field(s): {', '.join(unknown)}")
    # mig-parted accepts a file without mig-configs (it just has nothing to select).
    configs = _parse_configs(data["mig-configs"]) if "mig-configs" in data else {}
    return MigPartedConfig(version=SUPPORTED_VERSION, configs=configs)


def parse_mig_parted_yaml(text: str | bytes) -> MigPartedConfig:
    """A mig-parted config from YAML text (at most MAX_YAML_BYTES, MAX_YAML_DEPTH levels and
    MAX_YAML_ALIASES aliases, safe tags only)."""
    try:
        data = load_yaml(
            text, max_bytes=MAX_YAML_BYTES, max_depth=MAX_YAML_DEPTH, max_aliases=MAX_YAML_ALIASES
        )
    except SafeParseError as exc:
        raise MigPartedError(f"config {exc}") from exc
    return parse_mig_parted(data)


def mig_parted_from_configmap(obj: Any) -> dict[str, MigPartedConfig]:
    """Each `data` key of a ConfigMap whose value parses as a mig-parted config.

    Keys holding anything else (or a config mig-parted would refuse) are left out: a ConfigMap
    may mix scripts and configs, and callers that need to know why should parse the key alone.
    """
    if not isinstance(obj, dict):
        raise MigPartedError(f"a ConfigMap is a mapping, not {_kind(obj)}")
    kind = obj.get("kind")
    if kind is not None and kind != "ConfigMap":
        raise MigPartedError(f"expected a ConfigMap, got kind {kind!r}")
    data = obj.get("data")
    if not isinstance(data, dict):
        return {}
    found: dict[str, MigPartedConfig] = {}
    for key in sorted(data, key=str):
        value = data[key]
        if not isinstance(value, str):
            continue
        try:
            found[str(key)] = parse_mig_parted_yaml(value)
        except MigPartedError:
            continue
    return found


def matching_entries(
    config: MigPartedConfig, name: str, device_id: str, index: int
) -> tuple[MigPartedEntry, ...]:
    """Every entry of config `name` that applies to this GPU, in file order.

    More than one is a misconfiguration: mig-parted applies each in turn (see resolve)."""
    if name not in config.configs:
        raise MigPartedError(
            f"no mig-config named {name!r} among the {len(config.configs)} in this file"
        )
    return tuple(e for e in config.configs[name] if e.applies_to(device_id, index))


def resolve(
    config: MigPartedConfig, name: str, device_id: str, index: int
) -> MigPartedEntry | None:
    """The entry whose layout GPU `index` (PCI id `device_id`) ends up with, or None if no
    entry applies (mig-parted leaves that GPU alone).

    mig-parted walks the entries in order and applies every one that matches the GPU, each
    replacing the previous layout, so when entries overlap the last one is what stays.
    """
    matches = matching_entries(config, name, device_id, index)
    return matches[-1] if matches else None


def profile_slices(profile: str) -> int:
    """GPU-instance slices of a MIG profile name: 1g.10gb -> 1, 1c.3g.40gb -> 3."""
    match = _PROFILE.match(profile)
    if match is None:
        raise MigPartedError(f"{profile!r} is not a MIG profile name like '1g.10gb'")
    return int(match["g"])


def _parse_configs(raw: Any) -> dict[str, tuple[MigPartedEntry, ...]]:
    if not isinstance(raw, dict):
        raise MigPartedError(f"'mig-configs' must map config names to entries, not {_kind(raw)}")
    if not raw:
        raise MigPartedError("'mig-configs' needs at least one config")
    configs: dict[str, tuple[MigPartedEntry, ...]] = {}
    budget = MAX_ENTRIES
    for raw_name, entries in raw.items():
        name = _config_name(raw_name)
        if name in configs:
            raise MigPartedError(f"mig-configs: config name {name!r} appears twice")
        if not isinstance(entries, list) or not entries:
            raise MigPartedError(f"mig-configs.{name}: needs a non-empty list of entries")
        budget -= len(entries)
        if budget < 0:
            raise MigPartedError(f"more than {MAX_ENTRIES} entries in all mig-configs")
        configs[name] = tuple(
            _parse_entry(f"mig-configs.{name}[{i}]", e) for i, e in enumerate(entries)
        )
    return configs


def _config_name(raw: Any) -> str:
    # YAML may read a name like `true` or `1` as a scalar; mig-parted sees its text.
    if isinstance(raw, bool):
        return "true" if raw else "false"
    if isinstance(raw, str | int):
        return str(raw)
    raise MigPartedError(f"config name {raw!r} is not a string")


def _parse_entry(where: str, raw: Any) -> MigPartedEntry:
    if not isinstance(raw, dict):
        raise MigPartedError(f"{where}: an entry is a mapping, not {_kind(raw)}")
    unknown = sorted(str(k) for k in raw if k not in _ENTRY_KEYS)
    if unknown:
        raise MigPartedError(f"{where}: unexpected field(s) {', '.join(unknown)}")
    for required in ("devices", "mig-enabled"):
        if required not in raw:
            raise MigPartedError(f"{where}: missing required field '{required}'")
    enabled = raw["mig-enabled"]
    if not isinstance(enabled, bool):
        raise MigPartedError(f"{where}: 'mig-enabled' must be true or false, not {enabled!r}")
    mig_devices = _parse_mig_devices(where, raw.get("mig-devices"), enabled)
    return MigPartedEntry(
        devices=_parse_devices(where, raw["devices"]),
        mig_enabled=enabled,
        mig_devices=mig_devices,
        device_filter=_parse_device_filter(where, raw.get("device-filter")),
    )


def _parse_devices(where: str, raw: Any) -> str | tuple[int, ...]:
    if raw == ALL_DEVICES:
        return ALL_DEVICES
    if _short_list(raw) and all(isinstance(i, int) and not isinstance(i, bool) for i in raw):
        return tuple(raw)
    raise MigPartedError(f"{where}: 'devices' must be 'all' or a list of GPU indices, not {raw!r}")


def _parse_device_filter(where: str, raw: Any) -> tuple[str, ...]:
    # mig-parted treats a missing filter, "" and [] alike: the entry applies to every GPU model.
    if raw is None or raw == "":
        return ()
    if isinstance(raw, str):
        return (raw,)
    if _short_list(raw) and all(isinstance(item, str) for item in raw):
        return tuple(raw)
    # An unquoted 0x20B710DE is a YAML integer, which mig-parted refuses too.
    raise MigPartedError(
        f"{where}: 'device-filter' must be a quoted PCI id or a list of them, not {raw!r}"
    )


def _parse_mig_devices(where: str, raw: Any, enabled: bool) -> dict[str, int]:
    if raw is None:
        if enabled:
            raise MigPartedError(f"{where}: 'mig-devices' is required when 'mig-enabled' is true")
        return {}
    if not isinstance(raw, dict) or len(raw) > MAX_LIST_ITEMS:
        raise MigPartedError(f"{where}: 'mig-devices' must map profiles to counts")
    devices: dict[str, int] = {}
    for profile, count in raw.items():
        if not isinstance(profile, str) or _PROFILE.match(profile) is None:
            raise MigPartedError(f"{where}: {profile!r} is not a MIG profile name like '1g.10gb'")
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise MigPartedError(
                f"{where}: count for {profile!r} must be a whole number >= 0, not {count!r}"
            )
        devices[profile] = count
    if devices and not enabled:
        raise MigPartedError(f"{where}: 'mig-devices' listed while 'mig-enabled' is false")
    return devices


def _device_matches(device_filter: str, device_id: str) -> bool:
    """mig-parted compares ids as numbers (so case does not matter); a filter with a
    `:subsystem` part must match the GPU's subsystem too, one without matches any subsystem."""
    wanted, have = _device_key(device_filter), _device_key(device_id)
    if wanted is None or have is None:
        return device_filter.strip().lower() == device_id.strip().lower()
    if wanted[0] != have[0]:
        return False
    return wanted[1] is None or wanted[1] == have[1]


def _device_key(device_id: str) -> tuple[int, int | None] | None:
    parts = device_id.strip().split(":")
    if len(parts) > 2:
        return None
    try:
        numbers = [int(p, 0) for p in parts]
    except ValueError:
        return None
    return numbers[0], numbers[1] if len(numbers) == 2 else None


def _short_list(value: Any) -> bool:
    return isinstance(value, list) and len(value) <= MAX_LIST_ITEMS


def _kind(value: Any) -> str:
    return "nothing" if value is None else type(value).__name__
