"""A pod's stored `gpu_resources` holds every accelerator it holds, any vendor's (the sync now
stores inventory.snapshot.Pod.held_resources): rows stored before kept NVIDIA's only, so a pod
holding an AMD, Intel or Gaudi device read `{}` in the workloads API and on the node page until
its spec changed. Recomputed from the stored pod, only where a container asks for another
vendor's accelerator."""

from django.db import migrations

BATCH = 500


def held_resources(apps, schema_editor):
    from inventory import snapshot as snap

    Pod = apps.get_model("inventory", "Pod")
    changed = []
    for pod in Pod.objects.only("id", "data", "gpu_resources").iterator(chunk_size=BATCH):
        containers = (pod.data or {}).get("containers") or []
        if not any(c.get("accelerators") for c in containers):
            continue
        held = snap.from_dict(snap.Pod, pod.data).held_resources
        if held != pod.gpu_resources:
            pod.gpu_resources = held
            changed.append(pod)
        if len(changed) >= BATCH:
            Pod.objects.bulk_update(changed, ["gpu_resources"])
            changed = []
    if changed:
        Pod.objects.bulk_update(changed, ["gpu_resources"])


class Migration(migrations.Migration):
    dependencies = [("inventory", "0029_node_described_by")]
    operations = [migrations.RunPython(held_resources, migrations.RunPython.noop)]
