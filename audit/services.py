"""Recording audit events: the one way rows get into the log.

Callers record inside the transaction that makes the change, so a change that rolls back
leaves no event and an event never describes a change that did not happen:

    before = model_to_audit_dict(tenant)
    ... change and save the tenant ...
    audit_change(actor=request.user, obj=tenant, before=before, after=model_to_audit_dict(tenant))

`actor` is the user who acted (request.user from a page or the API), or for commands and tasks
a name such as "manage.py apply_tenants"; None records "system".
"""

from __future__ import annotations

import re
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import connection, models, transaction
from django.utils import timezone

from audit.chain import GENESIS, event_hash
from audit.models import AuditEvent
from audit.snapshots import as_json_data, model_to_audit_dict
from gpuposture.base.request_id import current_request_id

__all__ = ["Actor", "actor_name", "audit_change", "audit_record", "model_to_audit_dict"]

Actor = AbstractBaseUser | AnonymousUser | str | None

CREATE, UPDATE, DELETE = "create", "update", "delete"
SYSTEM = "system"
ACTION_RE = re.compile(r"[a-z][a-z0-9_]{0,31}")
# pg_advisory_xact_lock key that serialises appends to the chain ("audit" in ASCII).
_CHAIN_LOCK_KEY = 0x6175646974


@transaction.atomic
def audit_record(
    *,
    actor: Actor,
    action: str,
    obj: models.Model | None = None,
    object_type: str | None = None,
    object_id: Any = None,
    object_repr: str | None = None,
    before: Any = None,
    after: Any = None,
    request_id: str | None = None,
) -> AuditEvent:
    """Append one event. `obj` fills object_type (its app_label.model), object_id (its pk) and
    object_repr (str(obj)) unless given; pass object_id for an object already deleted. `before`
    is None for a create, `after` None for a delete; both must be JSON-able (dates, decimals
    and UUIDs become strings). `request_id` defaults to the current request's."""
    if not ACTION_RE.fullmatch(action):
        raise ValueError(f"action {action!r}: lowercase letters, digits, underscores (max 32)")
    if obj is not None:
        object_type = object_type or obj._meta.label_lower
        object_id = obj.pk if object_id is None else object_id
        object_repr = str(obj) if object_repr is None else object_repr
    if not object_type:
        raise ValueError("an audit event needs obj or object_type")
    user, actor_name = _actor(actor)
    event = AuditEvent(
        actor=user,
        actor_name=actor_name[:150],
        action=action,
        object_type=object_type[:100],
        object_id="" if object_id is None else str(object_id)[:64],
        object_repr=(object_repr or "")[:200],
        before=as_json_data(before),
        after=as_json_data(after),
        request_id=(request_id or current_request_id() or "")[:64],
    )
    _chain_lock()
    # Under the lock: the time and the previous hash are those of the chain's true end.
    event.time = timezone.now()
    event.prev_hash = (
        AuditEvent.objects.order_by("-id").values_list("hash", flat=True).first() or GENESIS
    )
    event.hash = event_hash(event.content(), event.prev_hash)
    event.save(force_insert=True)
    return event


def audit_change(
    *,
    actor: Actor,
    obj: models.Model,
    before: Any,
    after: Any,
    action: str = UPDATE,
    request_id: str | None = None,
) -> AuditEvent | None:
    """Record an update only if something changed (saving an unchanged form is no event)."""
    if as_json_data(before) == as_json_data(after):
        return None
    return audit_record(
        actor=actor, action=action, obj=obj, before=before, after=after, request_id=request_id
    )


def actor_name(actor: Actor) -> str:
    """The name an event records for `actor` (a username, a command, "system")."""
    return _actor(actor)[1][:150]


def _actor(actor: Actor) -> tuple[AbstractBaseUser | None, str]:
    if actor is None:
        return None, SYSTEM
    if isinstance(actor, str):
        return None, actor or SYSTEM
    if not actor.is_authenticated:
        return None, "anonymous"
    return actor, actor.get_username()


def _chain_lock() -> None:
    """Serialise appends so two events never share a prev_hash. PostgreSQL: a transaction-level
    advisory lock, held until the caller's transaction commits. SQLite serialises writers
    itself: a transaction that read a stale head cannot commit its insert. Other databases:
    lock the newest row (no lock on an empty log)."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_CHAIN_LOCK_KEY])
    elif connection.vendor != "sqlite":
        list(AuditEvent.objects.select_for_update().order_by("-id").values_list("pk")[:1])
