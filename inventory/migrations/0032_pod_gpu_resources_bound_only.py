"""A pod's stored `gpu_resources` lists what it holds, and a pod bound to no node (Pending,
unschedulable) holds nothing: a kubelet's device manager allocates devices only to a pod on its
node. The sync now stores `{}` for such a pod; rows stored before kept its request until the
pod changed. Cleared for pods with no node name in their stored spec."""

from django.db import migrations

from inventory.migrations._hold_none import BATCH, rows_hold_none


def unbound_hold_none(apps, schema_editor):
    Pod = apps.get_model("inventory", "Pod")
    rows = Pod.objects.filter(node__isnull=True).only("id", "data", "gpu_resources")
    # A pod bound to a node the inventory does not list (a node name in its spec) may hold.
    rows_hold_none(
        Pod, rows.iterator(chunk_size=BATCH), lambda pod: not (pod.data or {}).get("node_name")
    )


class Migration(migrations.Migration):
    dependencies = [("inventory", "0031_holdings_between")]
    operations = [migrations.RunPython(unbound_hold_none, migrations.RunPython.noop)]
