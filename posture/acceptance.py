"""When a risk acceptance may end: one rule for the finding page and the API. An acceptance
names a day; it lasts to the end of that day (UTC), from tomorrow at the earliest to
MAX_ACCEPTANCE_DAYS from now at the latest."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta

from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from posture.services import MAX_ACCEPTANCE_DAYS, AcceptanceError


def acceptance_window(today: date | None = None) -> tuple[date, date]:
    """The first and last day an acceptance may run to: tomorrow at the earliest (it lasts to
    the end of the day chosen, so today would already be in the past for part of the world),
    MAX_ACCEPTANCE_DAYS from now at the latest (finding_accept's limit)."""
    today = today or timezone.now().astimezone(UTC).date()
    return today + timedelta(days=1), today + timedelta(days=MAX_ACCEPTANCE_DAYS - 1)


def acceptance_until(day: date, today: date | None = None) -> datetime:
    """The expiry an acceptance to `day` stores: the end of that day, UTC. A day outside the
    window is refused with the window in the message (AcceptanceError)."""
    first, last = acceptance_window(today)
    if not first <= day <= last:
        raise AcceptanceError(
            f"Choose a day from {first:%Y-%m-%d} to {last:%Y-%m-%d}: an acceptance runs at "
            f"most {MAX_ACCEPTANCE_DAYS} days and its expiry (the end of that day, UTC) "
            "must be in the future."
        )
    return datetime.combine(day, time(23, 59, 59), tzinfo=UTC)


def acceptance_day(value: str) -> date:
    """The day an API `until` names: `YYYY-MM-DD`, or an ISO 8601 date-time whose date in UTC
    is taken (a time without an offset is UTC). Anything else: AcceptanceError."""
    text = value.strip()
    try:
        # parse_date/parse_datetime raise ValueError for a well-formed day no calendar has
        # (2026-02-30, 2026-13-01); they answer None for other shapes.
        day = parse_date(text) if len(text) == 10 else None
        if day is not None:
            return day
        moment = parse_datetime(text)
    except ValueError:
        raise AcceptanceError(f"`until` {text!r} is not a day of the calendar") from None
    if moment is None:
        raise AcceptanceError(
            "`until` must be a day (YYYY-MM-DD) or an ISO 8601 date-time, e.g. 2026-12-31"
        )
    if timezone.is_naive(moment):
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).date()
