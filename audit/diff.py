"""Which keys an audit event changed, for showing. PURE."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

MAX_VALUE_CHARS = 160


@dataclass(frozen=True)
class Change:
    key: str
    before: str | None  # compact JSON; None when the key did not exist before
    after: str | None  # None when the key no longer exists


def compact(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(", ", ": "))
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 1] + "…"


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
                before=compact(old[key]) if key in old else None,
                after=compact(new[key]) if key in new else None,
            )
        )
    return changes
