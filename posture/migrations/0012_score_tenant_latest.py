"""A covering index for the latest score of each tenant (issue 18, speed).

The overview and a tenant's page read each tenant's latest (and previous) risk, score, grade
and cap in correlated subqueries ordered by computed_at and id. With only (tenant,
-computed_at) indexed, every subquery read the score rows themselves; on SQLite those columns
come after `contributions` (thousands of entries for a tenant of a large world), so each read
walked the row's overflow pages. This index holds every column those subqueries read, in their
order, and replaces score_tenant_time (a prefix of it)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("posture", "0011_finding_evidence_digest"),
    ]

    operations = [
        migrations.RemoveIndex(model_name="tenantscore", name="score_tenant_time"),
        migrations.AddIndex(
            model_name="tenantscore",
            index=models.Index(
                fields=["tenant", "-computed_at", "-id", "risk", "score", "grade", "cap"],
                name="score_tenant_latest",
            ),
        ),
    ]
