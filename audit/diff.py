"""Which keys an audit event changed, for showing. PURE.

Values read as words (gpuposture.base.changes.shown): "not set" for null, timestamps in UTC."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpuposture.base.changes import MAX_VALUE_CHARS, compact, shown

__all__ = ["MAX_VALUE_CHARS", "Change", "changed_keys", "compact", "shown"]


@dataclass(frozen=True)
class Change:
    key: str
    before: str | None  # the value as words; None when the key did not exist before
    after: str | None  # None when the key no longer exists
    label: str = ""  # the field's name in words ("accepted until"); the key when empty

    @property
    def shown_label(self) -> str:
        return self.label or self.key.replace("_", " ")


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
