"""Values and changes as a person reads them, for the audit log and the drift table. PURE.

A value reads as words, not JSON: null is "not set", a timestamp is "2026-12-06 06:51 UTC", a
string has no quotes, a list of plain items is its items; only a mapping stays compact JSON.
A change between two mappings is the paths that differ ("replicas: 2 → 4"), never the whole
objects with every unchanged null beside them."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

MAX_VALUE_CHARS = 160
NOT_SET = "not set"
_TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}")
_ABSENT = {"present": False}  # how drift evidence says an object did not exist on one side


@dataclass(frozen=True)
class PathChange:
    path: str  # "entries nvidia.com/gpu replicas"; "" for a value that is not a mapping
    before: str | None  # None: the path did not exist on that side
    after: str | None


def compact(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(", ", ": "))
    return _cut(text)


def shown(value: Any) -> str:
    """A stored value as a person reads it."""
    if value is None:
        return NOT_SET
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return _cut(_when(value) or value or "empty")
    if isinstance(value, list):
        if any(isinstance(v, dict | list) for v in value):
            return compact(value)
        return _cut(", ".join(shown(v) for v in value)) if value else "none"
    if isinstance(value, dict):
        return compact(value)
    return _cut(str(value))


def changed_paths(before: Any, after: Any) -> list[PathChange]:
    """Only what differs between two values, path by path. A side that says the object was
    absent ({"present": false}) leaves the other side's paths added or removed."""
    old = _flat(None if before == _ABSENT else before, ())
    new = _flat(None if after == _ABSENT else after, ())
    return [
        PathChange(
            " ".join(path),
            shown(old[path]) if path in old else None,
            shown(new[path]) if path in new else None,
        )
        for path in sorted(old.keys() | new.keys())
        if old.get(path, _ABSENT) != new.get(path, _ABSENT)
    ]


def _flat(value: Any, path: tuple[str, ...]) -> dict[tuple[str, ...], Any]:
    """Leaves by path: mappings by key, a list of mappings by each item's name (or index)."""
    if value is None and not path:
        return {}
    if isinstance(value, dict) and value:
        out: dict[tuple[str, ...], Any] = {}
        for key, item in value.items():
            out |= _flat(item, (*path, _word(str(key))))
        return out
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        out = {}
        for i, item in enumerate(value):
            out |= _flat(item, (*path, str(item.get("name") or i)))
        return out
    return {path: value}


def _word(key: str) -> str:
    # "containers" holds one entry per container: "container nvidia-device-plugin args".
    return "container" if key == "containers" else key.replace("_", " ")


def _when(text: str) -> str:
    """An ISO timestamp as "YYYY-MM-DD HH:MM UTC"; "" for any other text."""
    if not _TIMESTAMP.match(text):
        return ""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return ""
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%d %H:%M UTC")


def _cut(text: str) -> str:
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 1] + "…"
