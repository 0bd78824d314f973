from django.db import migrations, models


def gpu_nodes_are_accelerator_nodes(apps, schema_editor):
    """Every NVIDIA GPU node is an accelerator node. Other vendors' nodes are found when the
    next sync reads their capacity (the stored records never kept it)."""
    Node = apps.get_model("inventory", "Node")
    Node.objects.filter(is_gpu_node=True).update(is_accelerator_node=True)


class Migration(migrations.Migration):
    dependencies = [
        ("inventory", "0026_syncrun_kinds_unread"),
    ]

    operations = [
        migrations.AddField(
            model_name="node",
            name="is_accelerator_node",
            field=models.BooleanField(default=False),
        ),
        migrations.RunPython(gpu_nodes_are_accelerator_nodes, migrations.RunPython.noop),
    ]
