"""The tenants file's viewer names kept as declared (TenantViewerName). An install's current
viewers are its declared names from now on: nobody loses or gains access by the upgrade, and
applying the same file again is unchanged (unless it names accounts that do not exist yet: those
names, dropped before, are kept from then on)."""

import django.db.models.deletion
from django.db import migrations, models


def viewers_to_names(apps, schema_editor):
    Tenant = apps.get_model("tenants", "Tenant")
    TenantViewerName = apps.get_model("tenants", "TenantViewerName")
    through = Tenant.viewers.through
    rows = through.objects.values_list("tenant_id", "user__username")
    TenantViewerName.objects.bulk_create(
        TenantViewerName(tenant_id=tenant_id, username=username) for tenant_id, username in rows
    )


def names_dropped(apps, schema_editor):
    """Back: the model goes; the viewers (Tenant.viewers) never moved."""


class Migration(migrations.Migration):
    dependencies = [
        ("tenants", "0010_tenant_slug_not_reserved"),
    ]

    operations = [
        migrations.CreateModel(
            name="TenantViewerName",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("username", models.CharField(db_index=True, max_length=150)),
                (
                    "tenant",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="viewer_names",
                        to="tenants.tenant",
                    ),
                ),
            ],
            options={
                "ordering": ["username"],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("tenant", "username"), name="tenant_viewer_name_unique"
                    )
                ],
            },
        ),
        migrations.RunPython(viewers_to_names, names_dropped),
    ]
