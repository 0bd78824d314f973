"""The hash chain and the diff, as pure functions: no database."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone

import pytest

from audit.chain import (
    GENESIS,
    EventContent,
    StoredEvent,
    canonical_bytes,
    event_hash,
    format_time,
    normalise_json,
    verify_chain,
)
from audit.diff import MAX_VALUE_CHARS, Change, changed_keys

T0 = datetime(2026, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)


def content(n: int, **changes: object) -> EventContent:
    base = EventContent(
        time=T0 + timedelta(seconds=n),
        actor="sec",
        action="update",
        object_type="tenants.tenant",
        object_id=str(n),
        object_repr=f"tenant-{n}",
        before={"name": f"old {n}"},
        after={"name": f"new {n}"},
        request_id=f"req-{n}",
    )
    return replace(base, **changes)


def chain(size: int) -> list[StoredEvent]:
    events, prev = [], GENESIS
    for n in range(1, size + 1):
        body = content(n)
        digest = event_hash(body, prev)
        events.append(StoredEvent(n, body, prev, digest))
        prev = digest
    return events


def test_an_intact_chain_verifies_and_reports_its_head():
    events = chain(5)
    report = verify_chain(iter(events))
    assert report.intact and report.count == 5
    assert (report.head_id, report.head_hash) == (5, events[-1].hash)


def test_an_empty_chain_is_intact():
    report = verify_chain([])
    assert report.intact and report.count == 0 and report.head_hash == GENESIS


def test_an_edited_event_breaks_its_own_hash():
    events = chain(5)
    events[2] = replace(events[2], content=content(3, after={"name": "forged"}))
    report = verify_chain(events)
    assert not report.intact and report.count == 3
    assert report.first_break.event_id == 3 and report.first_break.kind == "hash"
    assert "event 3: hash mismatch" in report.first_break.describe()
    assert "edited" in report.first_break.describe()


def test_a_removed_event_breaks_the_next_link():
    events = chain(5)
    del events[2]
    report = verify_chain(events)
    assert report.first_break.event_id == 4 and report.first_break.kind == "prev_hash"
    assert report.first_break.previous_id == 2
    assert "does not follow event 2" in report.first_break.describe()


def test_a_removed_first_event_is_seen():
    report = verify_chain(chain(3)[1:])
    assert report.first_break.event_id == 2 and report.first_break.kind == "prev_hash"
    assert "the start of the log" in report.first_break.describe()


def test_reordered_events_are_seen():
    events = chain(4)
    events[1], events[2] = events[2], events[1]
    report = verify_chain(events)
    assert report.first_break.event_id == 3 and report.first_break.kind == "prev_hash"


def test_a_rehashed_edit_still_breaks_the_next_link():
    events = chain(4)
    forged = content(2, actor="someone-else")
    events[1] = replace(events[1], content=forged, hash=event_hash(forged, events[1].prev_hash))
    report = verify_chain(events)
    assert report.first_break.event_id == 3 and report.first_break.kind == "prev_hash"


def test_an_anchor_catches_events_removed_from_the_end():
    events = chain(5)
    anchor = events[-1].hash
    assert verify_chain(events, anchor=anchor).anchor_found is True
    truncated = verify_chain(events[:3], anchor=anchor)
    assert truncated.first_break is None and truncated.anchor_found is False
    assert not truncated.intact
    assert verify_chain(events).anchor_found is None  # no anchor asked for


@pytest.mark.parametrize(
    "changes",
    [
        {"time": T0 + timedelta(microseconds=1)},
        {"actor": "mallory"},
        {"action": "delete"},
        {"object_type": "tenants.trustclass"},
        {"object_id": "99"},
        {"object_repr": "other"},
        {"before": None},
        {"after": {"name": "new 1", "extra": True}},
        {"request_id": ""},
    ],
)
def test_every_field_is_covered_by_the_hash(changes):
    assert event_hash(content(1), GENESIS) != event_hash(content(1, **changes), GENESIS)


def test_the_previous_hash_is_covered():
    assert event_hash(content(1), GENESIS) != event_hash(content(1), "f" * 64)


def test_the_canonical_form_survives_a_database_round_trip():
    # Another time zone, key order, tuples, and jsonb's integers for integral floats.
    paris = timezone(timedelta(hours=1))
    stored = content(1, before={"b": (1, 2), "a": 1.0}, after={"big": 1e20})
    read_back = content(
        1,
        time=(T0 + timedelta(seconds=1)).astimezone(paris),
        before={"a": 1, "b": [1, 2]},
        after={"big": 100000000000000000000},
    )
    assert canonical_bytes(stored, GENESIS) == canonical_bytes(read_back, GENESIS)


def test_times_keep_microseconds_in_utc():
    assert format_time(T0) == "2026-03-01T12:00:00.123456+00:00"
    assert format_time(T0.replace(microsecond=0)) == "2026-03-01T12:00:00.000000+00:00"
    assert format_time(datetime(2026, 3, 1, 12)) == "2026-03-01T12:00:00.000000+00:00"


def test_normalise_json_refuses_what_is_not_json():
    assert normalise_json({1: [1.5, 2.0, None, True]}) == {"1": [1.5, 2, None, True]}
    with pytest.raises(TypeError):
        normalise_json({"when": T0})


def test_not_a_number_cannot_be_hashed():
    with pytest.raises(ValueError):
        event_hash(content(1, after={"x": float("nan")}), GENESIS)


def test_changed_keys_of_an_update_create_and_delete():
    assert changed_keys({"a": 1, "b": [1]}, {"a": 1, "b": [1, 2], "c": "x"}) == [
        Change("b", "1", "1, 2"),
        Change("c", None, "x"),
    ]
    assert changed_keys(None, {"name": "é"}) == [Change("name", None, "é")]
    assert changed_keys({"name": "a"}, None) == [Change("name", "a", None)]
    assert changed_keys({"a": 1}, {"a": 1}) == []
    assert changed_keys("x", "y") == [Change("value", "x", "y")]


def test_changed_values_read_as_words_not_json():
    assert changed_keys(
        {"owner": None, "accepted_until": None, "ok": False, "tags": [], "spec": {"a": 1}},
        {
            "owner": "platform-engineer",
            "accepted_until": "2027-01-20T06:51:15.773650+00:00",
            "ok": True,
            "tags": ["a", "b"],
            "spec": {"a": 2},
        },
    ) == [
        Change("accepted_until", "not set", "2027-01-20 06:51 UTC"),
        Change("ok", "no", "yes"),
        Change("owner", "not set", "platform-engineer"),
        Change("spec", '{"a": 1}', '{"a": 2}'),
        Change("tags", "none", "a, b"),
    ]
    # An offset is read in UTC; a date alone or a word that merely starts with digits stays.
    assert changed_keys(None, {"t": "2026-12-06T08:51:00+02:00"})[0].after == "2026-12-06 06:51 UTC"
    assert changed_keys(None, {"d": "2026-12-06"})[0].after == "2026-12-06"


def test_long_values_are_shortened():
    [change] = changed_keys(None, {"k": "z" * 500})
    assert len(change.after) == MAX_VALUE_CHARS and change.after.endswith("…")
