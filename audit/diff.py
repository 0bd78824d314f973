"""Which keys an audit event changed, for showing. PURE.

Values read as words, not JSON: null is "not set", a timestamp is "2026-12-06 06:51 UTC", a
string has no quotes, a list is its items; only a mapping stays compact JSON."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

MAX_VALUE_CHARS = 160
NOT_SET = "not set"
_TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}")


@dataclass(frozen=True)
class Change:
    key: str
    before: str | None  # the value as words; None when the key did not exist before
    after: str | None  # None when the key no longer exists
    label: str = ""  # the field's name in words ("accepted until"); the key when empty

    @property
    def shown_label(self) -> str:
        return self.label or self.key.replace("_", " ")


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


def changed_keys(before: Any, after: Any) -> list[Change]:
    """The keys whose values differ, sorted; every key of `after` for a create (no `before`)
    and every key of `before` for a delete. Values that are not mappings count as one key."""
    old = before if isinstance(before, dict) else ({} if before is None else {"value": before})
    new = after if isinstance(after, dict) else ({} if after is None else {"value": after})
    changes = []
    for key in sorted(set(old) | set(new)):
        if key in old and key in new and old[key] == new[key]:
            continue
        changes.append(
            Change(
                key=str(key),
                before=shown(old[key]) if key in old else None,
                after=shown(new[key]) if key in new else None,
            )
        )
    return changes


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
