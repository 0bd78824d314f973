"""The audit log's hash chain. PURE: no Django, no database.

Each event's hash is sha256 over a canonical JSON of its content and the previous event's hash,
so editing a row breaks its own hash and removing or reordering rows breaks the next event's
link. The canonical form does not depend on the database: times are UTC ISO 8601 with
microseconds, JSON keys are sorted, integral floats are written as integers (PostgreSQL's jsonb
hands back 1e20 as 100000000000000000000).

What the chain cannot see on its own: the newest events removed, or the whole chain rewritten
by someone who recomputes every hash. Keep the head hash `verify_audit_log` prints somewhere
else (a ticket, a log shipped off the host) and pass it back with --anchor.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

GENESIS = "0" * 64  # the prev_hash of the first event
HASH_VERSION = 1


@dataclass(frozen=True)
class EventContent:
    """What an event's hash covers, apart from the previous hash. The acting user's id is not
    in it: the user may be deleted (the id becomes null); the actor's name is."""

    time: datetime
    actor: str
    action: str
    object_type: str
    object_id: str
    object_repr: str
    before: Any
    after: Any
    request_id: str


@dataclass(frozen=True)
class StoredEvent:
    id: int
    content: EventContent
    prev_hash: str
    hash: str


@dataclass(frozen=True)
class ChainBreak:
    """The first link that does not hold."""

    event_id: int
    kind: Literal["hash", "prev_hash"]
    expected: str
    found: str
    previous_id: int | None  # the last event whose link held, None at the start

    def describe(self) -> str:
        if self.kind == "hash":
            return (
                f"event {self.event_id}: hash mismatch: its content no longer matches its "
                f"stored hash (the row was edited); expected {self.expected}, found {self.found}"
            )
        after = f"event {self.previous_id}" if self.previous_id else "the start of the log"
        return (
            f"event {self.event_id}: prev_hash mismatch: it does not follow {after} (an event "
            f"before it was removed, or rows were reordered); expected {self.expected}, "
            f"found {self.found}"
        )


@dataclass(frozen=True)
class ChainReport:
    count: int  # events checked (up to and including a break)
    head_id: int | None  # the last event checked
    head_hash: str
    first_break: ChainBreak | None = None
    anchor_found: bool | None = None  # None when no anchor was asked for

    @property
    def intact(self) -> bool:
        return self.first_break is None and self.anchor_found is not False


def format_time(value: datetime) -> str:
    """UTC, microseconds always written: the same text before and after a database round trip."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).isoformat(timespec="microseconds")


def normalise_json(value: Any) -> Any:
    """JSON data in the one form the hash is taken over (and the database gives back)."""
    if isinstance(value, dict):
        return {str(key): normalise_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [normalise_json(item) for item in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if value is None or isinstance(value, str | int | float):
        return value
    raise TypeError(f"{type(value).__name__} is not JSON data")


def canonical_bytes(content: EventContent, prev_hash: str) -> bytes:
    document = {
        "v": HASH_VERSION,
        "time": format_time(content.time),
        "actor": content.actor,
        "action": content.action,
        "object_type": content.object_type,
        "object_id": content.object_id,
        "object_repr": content.object_repr,
        "before": normalise_json(content.before),
        "after": normalise_json(content.after),
        "request_id": content.request_id,
        "prev_hash": prev_hash,
    }
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return text.encode("ascii")  # ensure_ascii (the default) escapes everything else


def event_hash(content: EventContent, prev_hash: str) -> str:
    return hashlib.sha256(canonical_bytes(content, prev_hash)).hexdigest()


def verify_chain(events: Iterable[StoredEvent], *, anchor: str | None = None) -> ChainReport:
    """Walk the events in order (streamed, one at a time) and stop at the first broken link.
    With `anchor` (a head hash kept from an earlier run), also say whether it is still in the
    chain: if not, events were removed from the end or the chain was rewritten."""
    expected_prev, previous_id, count = GENESIS, None, 0
    anchor_found = None if anchor is None else anchor == GENESIS
    for event in events:
        count += 1
        computed = event_hash(event.content, event.prev_hash)
        if computed != event.hash:
            found = ChainBreak(event.id, "hash", computed, event.hash, previous_id)
            return ChainReport(count, event.id, event.hash, found, anchor_found)
        if event.prev_hash != expected_prev:
            found = ChainBreak(event.id, "prev_hash", expected_prev, event.prev_hash, previous_id)
            return ChainReport(count, event.id, event.hash, found, anchor_found)
        if anchor is not None and event.hash == anchor:
            anchor_found = True
        expected_prev, previous_id = event.hash, event.id
    return ChainReport(count, previous_id, expected_prev, None, anchor_found)
