"""Drop the per-tenant column: every finding's tenants are in FindingTenant (0005)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("posture", "0005_finding_tenants_merge")]

    operations = [
        migrations.RemoveIndex(model_name="finding", name="finding_tenant_status"),
        migrations.RemoveField(model_name="finding", name="tenant"),
    ]
