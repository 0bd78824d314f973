# The overview's open counts read an acceptance past its expiry as open
# (gpuposture.base.finding_status): the covering index they count from holds the expiry too,
# so they still never read the findings' rows.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("posture", "0017_mode_use_subject_names_tenant"),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name="finding",
            name="finding_status_severity",
        ),
        migrations.AddIndex(
            model_name="finding",
            index=models.Index(
                fields=["id", "status", "severity", "accepted_until"],
                name="finding_status_severity",
            ),
        ),
    ]
