"""A tenant's use of a sharing mode (SHARE-004, DRIFT-004) names the tenant in its subject.

Until now two tenants' uses of one mode in one pool had the same subject (SharingMode
`time_slicing` in pool `shared-ts`), told apart only by the key, which the API does not show:
a tool keyed on (check, subject) merged them. The subject name is now `tenant/mode`
(posture.rules.subjects.mode_use_draft); the key stays the tenant. Each stored finding is moved
to its new subject in place, with its fingerprint recomputed over it, so the next score
matches it: same id, first_seen, status and acceptance, no duplicate opened and no "resolved"
for the old subject.

Backward: the subject name loses its `tenant/` again, and the fingerprint with it.
"""

import hashlib

from django.db import migrations

CHECKS = ("SHARE-004", "DRIFT-004")


def fingerprint(check_id, cluster, kind, namespace, name, key):
    """posture.finding_store.finding_fingerprint as of this migration (frozen here)."""
    identity = "|".join((check_id, cluster, kind, namespace, name, key))
    return hashlib.sha256(identity.encode()).hexdigest()


def _move(apps, rename):
    Finding = apps.get_model("posture", "Finding")
    rows = Finding.objects.filter(check_id__in=CHECKS, subject_kind="SharingMode")
    changed = []
    for finding in rows.select_related("cluster").order_by("pk").iterator(2000):
        name = rename(finding.key, finding.subject_name)
        if name is None or name == finding.subject_name:
            continue
        finding.subject_name = name
        finding.fingerprint = fingerprint(
            finding.check_id,
            finding.cluster.name,
            finding.subject_kind,
            finding.subject_namespace,
            name,
            finding.key,
        )
        changed.append(finding)
    Finding.objects.bulk_update(changed, ["subject_name", "fingerprint"], batch_size=500)


def forward(apps, schema_editor):
    # Only rows still named by the mode alone, with their tenant in the key (every such draft
    # had it): rerunning, or a row already on the new subject, changes nothing.
    _move(apps, lambda key, name: f"{key}/{name}" if key and "/" not in name else None)


def backward(apps, schema_editor):
    _move(apps, lambda key, name: name.removeprefix(f"{key}/") if key else None)


class Migration(migrations.Migration):
    dependencies = [("posture", "0016_drop_scores_before_any_read")]

    operations = [migrations.RunPython(forward, backward)]
