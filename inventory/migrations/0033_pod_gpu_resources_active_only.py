"""A pod's stored `gpu_resources` lists what it holds, and a finished pod (Succeeded, Failed)
holds nothing though it stays bound to its node: the kubelet released its devices when its
containers ended. The sync now stores `{}` for a pod that is not active (inventory.snapshot.Pod
.is_active, the notion the checks use); rows stored before kept its request until the pod
changed, and a finished pod seldom changes again. Cleared by the stored phase."""

from django.db import migrations

from inventory.migrations._hold_none import BATCH, rows_hold_none

# Pod.is_active's phases when this migration was written (a migration does not follow the code).
ACTIVE_PHASES = ("Pending", "Running", "Unknown")


def finished_hold_none(apps, schema_editor):
    Pod = apps.get_model("inventory", "Pod")
    rows = Pod.objects.exclude(phase__in=ACTIVE_PHASES).only("id", "gpu_resources")
    rows_hold_none(Pod, rows.iterator(chunk_size=BATCH), lambda pod: True)


class Migration(migrations.Migration):
    dependencies = [("inventory", "0032_pod_gpu_resources_bound_only")]
    operations = [migrations.RunPython(finished_hold_none, migrations.RunPython.noop)]
