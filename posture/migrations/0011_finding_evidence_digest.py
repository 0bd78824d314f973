"""Finding.evidence_digest and PostureRun.actions_digest (issue 18, speed).

No backfill: a finding whose digest is "" differs from any draft's, so the next score rewrites it
once with its digest; a run without an actions digest makes the next one regroup the actions."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("posture", "0010_finding_ticket_owner"),
    ]

    operations = [
        migrations.AddField(
            model_name="finding",
            name="evidence_digest",
            field=models.CharField(blank=True, default="", max_length=64),
        ),
        migrations.AddField(
            model_name="posturerun",
            name="actions_digest",
            field=models.CharField(blank=True, default="", max_length=64),
        ),
    ]
