"""The audit log itself: recording, append-only (model and PostgreSQL trigger), the hash chain
as stored, verify_audit_log, and the request id."""

from __future__ import annotations

import io
import json
import threading
from datetime import timedelta

import pytest
from django.core.management import call_command, execute_from_command_line
from django.core.management.base import CommandError
from django.db import DatabaseError, IntegrityError, connection, connections, transaction
from django.test import Client
from django.utils import timezone

from audit.chain import GENESIS
from audit.models import AppendOnlyError, AuditEvent
from audit.selectors import audit_chain_verify
from audit.services import audit_change, audit_record, model_to_audit_dict
from tenants.models import TrustClass

pytestmark = pytest.mark.django_db

on_postgresql = pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="the append-only trigger exists on PostgreSQL only (set DATABASE_URL=postgres://...)",
)
# SQLite serialises writers by failing the later one ("database is locked"), never by forking.
concurrent_on_postgresql = pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="concurrent appends are tested on PostgreSQL (set DATABASE_URL=postgres://...)",
)
TABLE = "audit_auditevent"
TRIGGER = "audit_event_append_only"


def record(n: int, **extra: object) -> AuditEvent:
    return audit_record(
        actor="manage.py test",
        action="update",
        object_type="tenants.tenant",
        object_id=n,
        object_repr=f"tenant-{n}",
        before={"name": f"old {n}"},
        after={"name": f"new {n}"},
        **extra,
    )


def tamper(sql: str, params: list[object]) -> None:
    """Change rows behind the application's back (on PostgreSQL with the trigger off, as an
    owner of the table could)."""
    postgresql = connection.vendor == "postgresql"
    with connection.cursor() as cursor:
        if postgresql:
            # ALTER TABLE waits for no deferred foreign-key check: run them now.
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            cursor.execute(f"ALTER TABLE {TABLE} DISABLE TRIGGER {TRIGGER}")
        cursor.execute(sql, params)
        if postgresql:
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            cursor.execute(f"ALTER TABLE {TABLE} ENABLE TRIGGER {TRIGGER}")


def verify(*args: str) -> str:
    out = io.StringIO()
    call_command("verify_audit_log", *args, stdout=out)
    return out.getvalue()


def test_events_are_chained_from_genesis():
    first, second = record(1), record(2)
    assert first.prev_hash == GENESIS and second.prev_hash == first.hash
    assert len(first.hash) == 64 and first.hash != second.hash
    stored = AuditEvent.objects.get(pk=second.pk)
    assert stored.time == second.time and stored.time.microsecond == second.time.microsecond
    assert audit_chain_verify().intact


def test_an_event_names_its_object_and_actor(personas):
    trust_class = TrustClass.objects.get(slug="internal")
    event = audit_record(
        actor=personas["security_lead"],
        action="update",
        obj=trust_class,
        before={"rank": 2},
        after={"rank": 3},
    )
    assert event.actor == personas["security_lead"] and event.actor_name == "sec"
    assert (event.object_type, event.object_id, event.object_repr) == (
        "tenants.trustclass",
        str(trust_class.pk),
        "internal",
    )
    assert record(1).actor is None and record(2).actor_name == "manage.py test"
    assert audit_record(actor=None, action="create", object_type="x.y").actor_name == "system"


def test_snapshots_are_json_data():
    trust_class = TrustClass.objects.get(slug="sensitive")
    state = model_to_audit_dict(trust_class)
    assert state["slug"] == "sensitive" and state["approval_expiry_days"] == 90
    assert "id" not in state
    assert model_to_audit_dict(trust_class, fields=["slug", "rank"]) == {
        "slug": "sensitive",
        "rank": 4,
    }
    event = audit_record(actor=None, action="create", obj=trust_class, after=state)
    assert AuditEvent.objects.get(pk=event.pk).after == state


def test_an_unchanged_update_is_no_event():
    trust_class = TrustClass.objects.get(slug="internal")
    state = model_to_audit_dict(trust_class)
    assert audit_change(actor=None, obj=trust_class, before=state, after=dict(state)) is None
    assert not AuditEvent.objects.exists()


def test_bad_actions_and_missing_objects_are_refused():
    with pytest.raises(ValueError, match="action"):
        audit_record(actor=None, action="Drop Table", object_type="x.y")
    with pytest.raises(ValueError, match="obj or object_type"):
        audit_record(actor=None, action="create")


def test_the_model_refuses_update_and_delete():
    event = record(1)
    event.action = "delete"
    with pytest.raises(AppendOnlyError):
        event.save()
    with pytest.raises(AppendOnlyError):
        event.delete()
    with pytest.raises(AppendOnlyError):
        AuditEvent.objects.filter(pk=event.pk).update(action="delete")
    with pytest.raises(AppendOnlyError):
        AuditEvent.objects.filter(pk=event.pk).delete()
    with pytest.raises(AppendOnlyError):
        AuditEvent.objects.all().delete()
    with pytest.raises(AppendOnlyError):
        AuditEvent.objects.bulk_create([AuditEvent(action="x")])
    with pytest.raises(AppendOnlyError):
        AuditEvent.objects.update_or_create(pk=event.pk, defaults={"action": "x"})
    with pytest.raises(AppendOnlyError):
        AuditEvent(pk=event.pk + 100, action="x").save()
    assert AuditEvent.objects.get().action == "update"


def test_deleting_the_actor_keeps_the_event_and_its_name(personas):
    user = personas["auditor"]
    event = audit_record(actor=user, action="update", object_type="tenants.tenant", object_id=1)
    user.delete()
    stored = AuditEvent.objects.get(pk=event.pk)
    assert stored.actor is None and stored.actor_name == "aud"
    assert verify().startswith("1 events, chain intact")


@on_postgresql
@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE audit_auditevent SET action = 'delete'",
        "UPDATE audit_auditevent SET actor_name = 'mallory'",
        "UPDATE audit_auditevent SET actor_id = NULL, action = 'x'",
        "DELETE FROM audit_auditevent",
    ],
)
def test_the_postgresql_trigger_refuses_update_and_delete(sql, personas):
    audit_record(actor=personas["auditor"], action="update", object_type="tenants.tenant")
    with (
        pytest.raises(DatabaseError, match="append-only"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(sql)
    assert AuditEvent.objects.get().action == "update"


@on_postgresql
def test_the_trigger_allows_only_nulling_a_deleted_actor(personas):
    audit_record(actor=personas["auditor"], action="update", object_type="tenants.tenant")
    with connection.cursor() as cursor:
        cursor.execute("UPDATE audit_auditevent SET actor_id = NULL")
    assert AuditEvent.objects.get().actor_id is None


def test_verify_says_an_intact_chain_is_intact():
    assert verify() == "0 events, chain intact (empty)\n"
    events = [record(n) for n in range(1, 4)]
    out = verify()
    assert out.startswith("3 events, chain intact")
    assert f"head event {events[-1].pk} {events[-1].hash}" in out
    assert "anchor found" in verify("--anchor", events[1].hash)


def test_verify_names_an_edited_event():
    events = [record(n) for n in range(1, 5)]
    edited = events[2]
    forged = '{"name": "forged"}'
    tamper("UPDATE audit_auditevent SET after = %s WHERE id = %s", [forged, edited.pk])
    with pytest.raises(CommandError, match=rf"BROKEN at event {edited.pk}: hash mismatch"):
        verify()


def test_verify_names_the_event_after_a_removed_one():
    events = [record(n) for n in range(1, 5)]
    tamper("DELETE FROM audit_auditevent WHERE id = %s", [events[1].pk])
    message = rf"BROKEN at event {events[2].pk}: prev_hash mismatch: it does not follow event "
    with pytest.raises(CommandError, match=message + str(events[0].pk)):
        verify()


def test_verify_sees_a_rewritten_prev_hash_as_an_edit():
    events = [record(n) for n in range(1, 4)]
    tamper("UPDATE audit_auditevent SET prev_hash = %s WHERE id = %s", ["e" * 64, events[1].pk])
    with pytest.raises(CommandError, match=rf"event {events[1].pk}: hash mismatch"):
        verify()


def test_verify_with_an_anchor_sees_events_removed_from_the_end():
    events = [record(n) for n in range(1, 4)]
    tamper("DELETE FROM audit_auditevent WHERE id = %s", [events[-1].pk])
    assert verify().startswith("2 events, chain intact")  # the chain alone cannot tell
    with pytest.raises(CommandError, match="anchor .* is not in the chain"):
        verify("--anchor", events[-1].hash)
    with pytest.raises(CommandError, match="64 lowercase hex"):
        verify("--anchor", "nothex")


def test_verify_streams_in_chunks():
    for n in range(1, 8):
        record(n)
    assert verify("--chunk-size", "2").startswith("7 events, chain intact")


def test_verify_exits_non_zero_from_the_command_line(capsys):
    record(1)
    tamper("UPDATE audit_auditevent SET object_repr = 'forged'", [])
    with pytest.raises(SystemExit) as exit_info:
        execute_from_command_line(["manage.py", "verify_audit_log"])
    assert exit_info.value.code != 0
    assert "hash mismatch" in capsys.readouterr().err


def test_a_fork_cannot_be_committed():
    first = record(1)
    forked = AuditEvent(
        time=first.time, actor_name="x", action="update", object_type="x.y", prev_hash=GENESIS
    )
    forked.hash = "f" * 64
    with pytest.raises(IntegrityError), transaction.atomic():
        forked.save(force_insert=True)


@concurrent_on_postgresql
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_concurrent_writers_never_share_a_prev_hash():
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def writer(worker: int) -> None:
        try:
            start.wait()
            for n in range(10):
                record(worker * 100 + n)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert AuditEvent.objects.count() == 40
    assert len(set(AuditEvent.objects.values_list("prev_hash", flat=True))) == 40
    assert audit_chain_verify().intact


@pytest.mark.parametrize(
    "sent, kept",
    [("abc-123", True), ("A.b_C-9" * 9, True), ("x" * 65, False), ("a b", False), ("", False)],
)
def test_the_request_id_is_made_by_the_server_whatever_the_header(sent, kept, personas):
    client = Client(headers={"X-Request-ID": sent} if sent else {})
    client.force_login(personas["auditor"])
    response = client.get("/audit/")
    echoed = response["X-Request-ID"]
    assert echoed != sent and len(echoed) == 32 and int(echoed, 16) >= 0
    # The caller's own id, when sane, comes back under its own name, never as the id.
    assert response.get("X-Client-Request-ID") == (sent if kept else None)


@pytest.mark.parametrize(
    "sent", ["req-from-proxy-7", "0123456789abcdef0123456789abcdef", "x" * 65, 'a"\n{b']
)
def test_a_client_header_never_becomes_the_recorded_request_id(sent, small_world, personas):
    """Issue 16 item 7: an audit event's request id is the server's, whatever the client sent
    (even a header shaped exactly like a server id)."""
    from posture.models import Finding

    finding = Finding.objects.filter(status="open", tenants__slug="beta").first()
    soon = (timezone.now() + timedelta(days=30)).date()
    client = Client(headers={"X-Request-ID": sent})
    client.force_login(personas["security_lead"])
    response = client.post(
        f"/findings/{finding.pk}/accept/",
        {"reason": "accepted while the vendor ships a fix", "until": soon.isoformat()},
    )
    event = AuditEvent.objects.get(action="accept")
    stored = json.dumps(event.content().__dict__, default=str)
    assert event.request_id != sent and sent not in stored
    assert event.request_id == response["X-Request-ID"] and len(event.request_id) == 32
    assert record(99).request_id == ""  # outside a request: none


def test_every_response_carries_a_request_id():
    assert len(Client().get("/healthz")["X-Request-ID"]) == 32
    assert Client().get("/audit/")["X-Request-ID"]  # a redirect to the login page too
