from django.db import migrations, models


class Migration(migrations.Migration):
    """Tenant.is_system: the system tenant `unclassified` (namespaces nobody claims)."""

    dependencies = [("tenants", "0005_trust_class_risk_weight")]

    operations = [
        migrations.AddField(
            model_name="tenant",
            name="is_system",
            field=models.BooleanField(default=False, db_default=False, editable=False),
        ),
    ]
