from django.db import migrations, models


class Migration(migrations.Migration):
    """Tenant.is_system: the system tenant `unclassified` (namespaces nobody claims)."""

    dependencies = [("tenants", "0004_sharing_requests")]

    operations = [
        migrations.AddField(
            model_name="tenant",
            name="is_system",
            field=models.BooleanField(default=False, db_default=False, editable=False),
        ),
    ]
