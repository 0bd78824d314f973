"""Trust classes get a risk weight (DESIGN §6): how bad a risk to a tenant of the class is.

The default classes get their documented weights; a class an operator added keeps 1. Frozen
here on purpose: a data migration must not change when the documented defaults do.
"""

import django.core.validators
from django.db import migrations, models

DEFAULT_WEIGHTS = {
    "sensitive": 10.0,
    "internal": 2.0,
    "internal_trusted": 1.0,
    "external": 1.0,
    "platform": 1.0,
}


def set_default_weights(apps, schema_editor):
    TrustClass = apps.get_model("tenants", "TrustClass")
    for slug, weight in DEFAULT_WEIGHTS.items():
        TrustClass.objects.filter(slug=slug).update(risk_weight=weight)


class Migration(migrations.Migration):
    dependencies = [("tenants", "0004_sharing_requests")]

    operations = [
        migrations.AddField(
            model_name="trustclass",
            name="risk_weight",
            field=models.FloatField(
                default=1.0,
                help_text="Multiplies the risk points of findings affecting tenants of this "
                "class (defaults: sensitive 10, internal 2, the others 1).",
                validators=[
                    django.core.validators.MinValueValidator(0.1),
                    django.core.validators.MaxValueValidator(100),
                ],
            ),
        ),
        migrations.AddConstraint(
            model_name="trustclass",
            constraint=models.CheckConstraint(
                condition=models.Q(risk_weight__gt=0), name="trustclass_risk_weight_positive"
            ),
        ),
        migrations.RunPython(set_default_weights, migrations.RunPython.noop),
    ]
