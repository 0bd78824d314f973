"""Usage stored under a pod label the last sync contradicted (the pod bound to another node),
booked to that pod's owner at confidence none before, moves to nobody (unattributed:
telemetry.attribution). Uses the app's own code (telemetry.rebook, the roll-up): a fresh
database has no samples and does nothing."""

from django.db import migrations


def rebook(apps, schema_editor):
    stored = apps.get_model("telemetry", "GpuReading").objects
    if not stored.filter(confidence="none").exclude(pod="").exists():
        return
    from telemetry.rebook import all_contradicted_labels_rebook

    all_contradicted_labels_rebook()


class Migration(migrations.Migration):
    dependencies = [
        ("telemetry", "0004_prometheus_match"),
        # The app's own models are used: every app they read at its present state.
        ("tenants", "0011_tenant_viewer_names"),
        ("inventory", "0036_sync_run_files_read"),
        ("audit", "0002_append_only_trigger"),
    ]

    operations = [migrations.RunPython(rebook, migrations.RunPython.noop)]
