"""Usage in namespaces nobody claims, booked to the platform before, moves to the unclassified
tenant (DESIGN §3). Uses the app's own code (telemetry.rebook: the platform namespaces as the
sync finds them, the roll-up): a fresh database has no samples and does nothing."""

from django.db import migrations


def rebook(apps, schema_editor):
    if (
        not apps.get_model("telemetry", "GpuReading")
        .objects.filter(attribution="platform")
        .exists()
    ):
        return
    from telemetry.rebook import all_unclaimed_usage_rebook

    all_unclaimed_usage_rebook()


class Migration(migrations.Migration):
    dependencies = [
        ("telemetry", "0002_usage_daily"),
        ("tenants", "0007_trustclass_pool_taints"),
        ("inventory", "0018_bulletinfix_released"),
        ("audit", "0002_append_only_trigger"),
    ]

    operations = [migrations.RunPython(rebook, migrations.RunPython.noop)]
