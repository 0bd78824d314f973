"""A pod's stored `gpu_resources` lists what it holds, and a pod bound to no node (Pending,
unschedulable) holds nothing: a kubelet's device manager allocates devices only to a pod on its
node. The sync now stores `{}` for such a pod; rows stored before kept its request until the
pod changed. Cleared for pods with no node name in their stored spec."""

from django.db import migrations

BATCH = 500


def unbound_hold_none(apps, schema_editor):
    Pod = apps.get_model("inventory", "Pod")
    changed = []
    rows = Pod.objects.filter(node__isnull=True).only("id", "data", "gpu_resources")
    for pod in rows.iterator(chunk_size=BATCH):
        if not pod.gpu_resources or (pod.data or {}).get("node_name"):
            continue  # holds none already, or bound to a node the inventory does not list
        pod.gpu_resources = {}
        changed.append(pod)
        if len(changed) >= BATCH:
            Pod.objects.bulk_update(changed, ["gpu_resources"])
            changed = []
    if changed:
        Pod.objects.bulk_update(changed, ["gpu_resources"])


class Migration(migrations.Migration):
    dependencies = [("inventory", "0031_holdings_between")]
    operations = [migrations.RunPython(unbound_hold_none, migrations.RunPython.noop)]
