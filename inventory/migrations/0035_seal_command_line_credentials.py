"""Credentials given on a container's command line (`--hf-token hf_...`, `aws configure set
aws_secret_access_key ...` in a `sh -c` script) that were stored before the sync sealed them
(inventory/env_seal.stored_arguments) are sealed in place, in every stored copy of a container:
pods, workloads' templates and DaemonSets (ClusterObject), drift records and sync run changes.
POD-008 reads the same finding from the sealed marker; the secret leaves the database."""

from django.db import migrations

from gpuposture.base.batching import IDS_PER_QUERY

# (model, JSON fields holding containers)
_STORES = (
    ("Pod", ("data",)),
    ("ClusterObject", ("data",)),
    ("DriftEvent", ("before", "after")),
    ("SyncRun", ("changes",)),
)


def seal_rows(apps, schema_editor):
    from inventory.env_seal import seal_stored_arguments

    for model_name, fields in _STORES:
        model = apps.get_model("inventory", model_name)
        ids = list(model.objects.order_by("pk").values_list("pk", flat=True))
        for start in range(0, len(ids), IDS_PER_QUERY):
            batch = model.objects.filter(pk__in=ids[start : start + IDS_PER_QUERY])
            changed = []
            for row in batch.only("pk", *fields):
                sealed = {f: seal_stored_arguments(getattr(row, f)) for f in fields}
                if any(sealed[f] != getattr(row, f) for f in fields):
                    for f, value in sealed.items():
                        setattr(row, f, value)
                    changed.append(row)
            if changed:
                model.objects.bulk_update(changed, list(fields))


class Migration(migrations.Migration):
    dependencies = [("inventory", "0034_node_uid_of_holdings")]
    operations = [migrations.RunPython(seal_rows, migrations.RunPython.noop)]
