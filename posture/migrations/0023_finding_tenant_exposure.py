"""FindingTenant.exposure: what a finding spans of one tenant's, where that is not the
finding's whole exposure (K8S-008's binding reaching seven namespaces of several tenants: a
victim with one of them is weighed by 1, not 7). Null, as every existing link is left: the
finding's exposure, as before; the next score writes the tenants' own where a check gives them.

Backward: drops the column.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("posture", "0022_finding_accepted_at"),
    ]

    operations = [
        migrations.AddField(
            model_name="findingtenant",
            name="exposure",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
    ]
