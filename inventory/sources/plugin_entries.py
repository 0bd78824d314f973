"""Device-plugin sharing entries we cannot interpret (issue 17 item 2). PURE.

A `sharing.timeSlicing` / `sharing.mps` section the device plugin would read but we cannot (a
resource with no name, replicas that are not a positive integer, a `devices` value that is not
"all", a count or a list, a `rename` that is not a name) must not be read past: dropping the
entry would leave its devices "exclusive" by default. The whole config is then unreadable
(STACK-007 on the nodes using it, their sharing `unknown`)."""

from __future__ import annotations

from typing import Any

from inventory.sources.raw import as_int

SECTIONS = ("timeSlicing", "mps")


def entry_problems(config: dict[str, Any]) -> list[str]:
    """What cannot be interpreted in a parsed device-plugin config's sharing sections."""
    sharing = config.get("sharing")
    if sharing is None:
        return []
    if not isinstance(sharing, dict):
        return ["'sharing' is not a mapping"]
    problems: list[str] = []
    for name in SECTIONS:
        section = sharing.get(name)
        if section is None:
            continue
        if not isinstance(section, dict):
            problems.append(f"sharing.{name} is not a mapping")
            continue
        resources = section.get("resources")
        if resources is None:
            continue
        if not isinstance(resources, list):
            problems.append(f"sharing.{name}.resources is not a list")
            continue
        for index, entry in enumerate(resources):
            problems += _entry_problems(f"sharing.{name}.resources[{index}]", entry)
    return problems


def _entry_problems(where: str, entry: Any) -> list[str]:
    if not isinstance(entry, dict):
        return [f"{where} is not a mapping"]
    problems = []
    name = entry.get("name")
    if not isinstance(name, str) or not name.strip():
        problems.append(f"{where}.name is missing or not a resource name")
    replicas = as_int(entry.get("replicas"))
    if replicas is None or replicas < 1:
        problems.append(f"{where}.replicas {entry.get('replicas')!r} is not a positive integer")
    rename = entry.get("rename")
    if rename is not None and (not isinstance(rename, str) or not rename.strip()):
        problems.append(f"{where}.rename {rename!r} is not a resource name")
    if not _devices_readable(entry.get("devices")):
        problems.append(f"{where}.devices {entry.get('devices')!r} is not 'all', a count or a list")
    return problems


def _devices_readable(devices: Any) -> bool:
    if devices is None or devices == "all":
        return True
    if isinstance(devices, list):
        return all(isinstance(d, str | int) and not isinstance(d, bool) for d in devices)
    count = as_int(devices)
    return count is not None and count > 0
