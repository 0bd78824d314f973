"""Reads of the audit log: the chain for verification, pages of events for people."""

from __future__ import annotations

from collections.abc import Iterator

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

from audit.chain import ChainReport, EventContent, StoredEvent, verify_chain
from audit.diff import Change
from audit.models import AuditEvent
from audit.names import named_event_rows

CHAIN_FIELDS = (
    "id",
    "time",
    "actor_name",
    "action",
    "object_type",
    "object_id",
    "object_repr",
    "before",
    "after",
    "request_id",
    "prev_hash",
    "hash",
)


def audit_chain(*, chunk_size: int = 2000) -> Iterator[StoredEvent]:
    """Every event in chain order, streamed in chunks (no model instances)."""
    rows = AuditEvent.objects.order_by("id").values_list(*CHAIN_FIELDS)
    for row in rows.iterator(chunk_size=chunk_size):
        pk, time, actor, action, object_type, object_id, object_repr, before, after = row[:9]
        request_id, prev_hash, digest = row[9:]
        content = EventContent(
            time, actor, action, object_type, object_id, object_repr, before, after, request_id
        )
        yield StoredEvent(pk, content, prev_hash, digest)


def audit_chain_verify(*, chunk_size: int = 2000, anchor: str | None = None) -> ChainReport:
    return verify_chain(audit_chain(chunk_size=chunk_size), anchor=anchor)


def audit_events_for(user: AbstractBaseUser | AnonymousUser):
    """The events `user` may read (none unless auditor, security lead or superuser)."""
    return AuditEvent.objects.visible_to(user)


def audit_event_rows(events: list[AuditEvent]) -> list[tuple[AuditEvent, list[Change]]]:
    """Each event with the keys it changed, for the page: related objects by name."""
    return named_event_rows(events)
