"""A finding carries the tenants it affects (FindingTenant) and its exposure; the old tenant
column stays until 0005 has moved every row onto the relation (0006 drops it)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("posture", "0003_finding_list_order"),
        ("tenants", "0004_sharing_requests"),
    ]

    operations = [
        # The relation below takes the reverse name "findings"; the old column gives it up.
        migrations.AlterField(
            model_name="finding",
            name="tenant",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to="tenants.tenant",
            ),
        ),
        migrations.CreateModel(
            name="FindingTenant",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "finding",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="tenant_links",
                        to="posture.finding",
                    ),
                ),
                (
                    "tenant",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="finding_links",
                        to="tenants.tenant",
                    ),
                ),
            ],
            options={
                "indexes": [
                    models.Index(fields=["tenant", "finding"], name="findingtenant_tenant")
                ],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("finding", "tenant"), name="findingtenant_unique"
                    )
                ],
            },
        ),
        migrations.AddField(
            model_name="finding",
            name="exposure",
            field=models.PositiveIntegerField(default=1),
        ),
        migrations.AddField(
            model_name="finding",
            name="tenants",
            field=models.ManyToManyField(
                blank=True,
                related_name="findings",
                through="posture.FindingTenant",
                to="tenants.tenant",
            ),
        ),
    ]
