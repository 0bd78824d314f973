"""On PostgreSQL, the database itself refuses UPDATE and DELETE of audit events.

The one UPDATE allowed is Django nulling `actor_id` when the acting user's account is deleted
(ON DELETE SET NULL, done by Django): every other column must stay the same, and the actor's
name, which the hash covers, is kept. TRUNCATE is not refused: the test runner empties every
table with TRUNCATE between transactional tests (pytest-django, TransactionTestCase); a
truncated log shows as an empty chain, which `verify_audit_log --anchor HASH` reports.
"""

from __future__ import annotations

from django.db import migrations

TRIGGER = "audit_event_append_only"
FUNCTION = "audit_event_refuse_change"

CREATE = f"""
CREATE OR REPLACE FUNCTION {FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.actor_id IS NOT NULL AND NEW.actor_id IS NULL
       AND (to_jsonb(NEW) - 'actor_id') = (to_jsonb(OLD) - 'actor_id') THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'audit events are append-only: % on % refused', TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'integrity_constraint_violation';
END;
$$;
DROP TRIGGER IF EXISTS {TRIGGER} ON audit_auditevent;
CREATE TRIGGER {TRIGGER} BEFORE UPDATE OR DELETE ON audit_auditevent
    FOR EACH ROW EXECUTE FUNCTION {FUNCTION}();
"""

DROP = f"""
DROP TRIGGER IF EXISTS {TRIGGER} ON audit_auditevent;
DROP FUNCTION IF EXISTS {FUNCTION}();
"""


def _run_on_postgresql(sql: str):
    def run(apps, schema_editor) -> None:
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(sql, params=None)  # no placeholders: RAISE uses %

    return run


class Migration(migrations.Migration):
    dependencies = [("audit", "0001_initial")]

    operations = [migrations.RunPython(_run_on_postgresql(CREATE), _run_on_postgresql(DROP))]
