"""The seed tenant classes require images pinned by digest (POD-007, DESIGN §2), and so does a
new class by default.

0002 seeded the classes before the image policy existed and 0003 added the flag as False, so on
an install that never set it POD-007 judged nothing. This sets it on the four seed tenant
classes (by slug; `platform` is not judged by POD-007) where it is still False and the class's
image policy was never touched (no approved registries either): a class whose admin listed
registries but left the digest off chose that, and keeps it.

Frozen here on purpose, like 0002: a data migration must not change when tenants/policy.py does.
"""

from django.db import migrations, models

SEED_TENANT_CLASSES = ["internal_trusted", "internal", "external", "sensitive"]


def require_digest(apps, schema_editor):
    TrustClass = apps.get_model("tenants", "TrustClass")
    # Four rows at most: compared in Python, so no JSON lookup differs between databases.
    for trust_class in TrustClass.objects.filter(
        slug__in=SEED_TENANT_CLASSES, require_image_digest=False
    ):
        if not trust_class.approved_registries:
            trust_class.require_image_digest = True
            trust_class.save(update_fields=["require_image_digest"])


class Migration(migrations.Migration):
    dependencies = [("tenants", "0007_trustclass_pool_taints")]

    operations = [
        migrations.AlterField(
            model_name="trustclass",
            name="require_image_digest",
            field=models.BooleanField(
                default=True, help_text="Tenant images must be pinned by @sha256 digest (POD-007)."
            ),
        ),
        # Reversing leaves the flags as they are: which were set here is not recorded, and
        # turning a digest rule off is the admin's call, not a migration's.
        migrations.RunPython(require_digest, migrations.RunPython.noop),
    ]
