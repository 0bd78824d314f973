from django.db import migrations, models

import tenants.models


class Migration(migrations.Migration):
    """TrustClass.pool_taints: exact taints marking a class's node pool (K8S-002, POD-009)."""

    dependencies = [("tenants", "0006_tenant_is_system_unclassified")]

    operations = [
        migrations.AddField(
            model_name="trustclass",
            name="pool_taints",
            field=models.JSONField(
                blank=True,
                default=list,
                help_text="Exact taints marking this class's node pool, as key=value:effect "
                "(effect NoSchedule or NoExecute), besides "
                "GPUPOSTURE_POOL_TAINT_KEYS=<this slug> (K8S-002, POD-009).",
                validators=[tenants.models.validate_pool_taints],
            ),
        ),
    ]
