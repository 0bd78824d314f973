"""Finding.accepted_at: when a finding's risk was accepted.

What a security lead accepts is the evidence seen then (DESIGN §5), so a drift finding that
lists a change detected after its acceptance opens again (posture.finding_store). Accepted rows
are backfilled from the audit log: an `accept` event's time, or for an acceptance carried from
other findings (a `carry` event: a widened subject, or the merges of posture.0019-0021) the
earliest of their own acceptances. Where the log does not say, it stays null: unknown, and
such an acceptance is kept as before (until its expiry or a withdrawal).

Backward: drops the column.
"""

from django.db import migrations, models

GRANTS = ("accept", "carry")  # the events that make a finding's current acceptance
DEPTH = 5  # carries of carries followed at most (a chain longer is left unknown)


def backfill(apps, schema_editor):
    Finding = apps.get_model("posture", "Finding")
    AuditEvent = apps.get_model("audit", "AuditEvent")
    accepted = list(Finding.objects.filter(status="accepted").values_list("pk", flat=True))
    if not accepted:
        return
    # Every acceptance event of findings (a few per accepted finding), latest per finding.
    latest = {}
    events = AuditEvent.objects.filter(object_type="posture.finding", action__in=GRANTS)
    for object_id, action, time, after in events.order_by("id").values_list(
        "object_id", "action", "time", "after"
    ):
        latest[object_id] = (action, time, after if isinstance(after, dict) else {})
    for pk in accepted:
        moment = accepted_at(str(pk), latest, DEPTH)
        if moment is not None:
            Finding.objects.filter(pk=pk).update(accepted_at=moment)


def accepted_at(object_id, latest, depth):
    """When the acceptance the latest event of `object_id` granted was made, or None."""
    if depth <= 0 or object_id not in latest:
        return None
    action, time, after = latest[object_id]
    if action == "accept":
        return time
    sources = after.get("from_findings") or []
    moments = [accepted_at(str(source), latest, depth - 1) for source in sources]
    if not moments or None in moments:
        return None
    return min(moments)


class Migration(migrations.Migration):
    dependencies = [
        ("posture", "0021_drift_one_per_subject"),
        ("audit", "0002_append_only_trigger"),
    ]

    operations = [
        migrations.AddField(
            model_name="finding",
            name="accepted_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]
