"""The five default trust classes of DESIGN §3, as data (editable in the admin afterwards).

Frozen here on purpose: a data migration must not change when tenants/policy.py does.
"""

from django.db import migrations

ALL_MODES = [
    "exclusive",
    "mig_gi",
    "mig_ci",
    "vgpu_fixed",
    "vgpu_equal",
    "vgpu_best_effort",
    "mps",
    "time_slicing",
]

DEFAULTS = [
    {
        "slug": "platform",
        "name": "Platform",
        "rank": 0,
        "description": "The platform team's own system workloads.",
        "allowed_modes": ALL_MODES,
        "same_class_only_modes": [],
    },
    {
        "slug": "internal_trusted",
        "name": "Internal, trusted",
        "rank": 1,
        "description": "Same organisation, reviewed code.",
        "allowed_modes": [
            "exclusive",
            "mig_gi",
            "vgpu_fixed",
            "vgpu_equal",
            "vgpu_best_effort",
            "mps",
            "time_slicing",
        ],
        "same_class_only_modes": ["time_slicing"],
    },
    {
        "slug": "internal",
        "name": "Internal",
        "rank": 2,
        "description": "Other internal teams.",
        "allowed_modes": ["exclusive", "mig_gi", "vgpu_fixed", "vgpu_equal"],
        "same_class_only_modes": [],
    },
    {
        "slug": "external",
        "name": "External",
        "rank": 3,
        "description": "Customers, untrusted or third-party code.",
        "allowed_modes": ["exclusive", "mig_gi"],
        "same_class_only_modes": [],
        "requires_dedicated_pool": True,
    },
    {
        "slug": "sensitive",
        "name": "Sensitive",
        "rank": 4,
        "description": "Regulated data, crown-jewel models.",
        "allowed_modes": ["exclusive", "mig_gi"],
        "same_class_only_modes": [],
        "requires_dedicated_pool": True,
        "requires_reset_attestation": True,
        "approval_expiry_days": 90,
    },
]


def create_defaults(apps, schema_editor):
    TrustClass = apps.get_model("tenants", "TrustClass")
    for item in DEFAULTS:
        TrustClass.objects.get_or_create(slug=item["slug"], defaults=item)


class Migration(migrations.Migration):
    dependencies = [("tenants", "0001_initial")]
    operations = [migrations.RunPython(create_defaults, migrations.RunPython.noop)]
