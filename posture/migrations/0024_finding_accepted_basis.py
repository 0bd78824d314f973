"""Finding.accepted_basis: what the acceptance of a bulletin exposure finding (STACK-001..003,
-005) saw: its CVEs, the highest fix per component, its severity. A later bulletin listing more
opens the finding again (posture.finding_store, posture.rules.stack.accepted).

Accepted rows of those checks are backfilled from their stored evidence and severity: what
they list now is the most that is known to have been accepted (a bulletin imported after the
acceptance and before this migration cannot be told apart, and stays covered); from here on,
a new CVE, a higher fix or a higher severity opens them. Other rows stay null.

Backward: drops the column.
"""

from functools import cmp_to_key

from django.db import migrations, models

from inventory.bulletins.csaf.versions import compare, parse_version

# A frozen copy of posture.rules.stack.accepted.exposure_basis (as of this migration).
EXPOSURE_LISTS = {
    "STACK-001": "exposures",
    "STACK-002": "exposures",
    "STACK-003": "exposures",
    "STACK-005": "late_exposures",
}


def backfill(apps, schema_editor):
    Finding = apps.get_model("posture", "Finding")
    rows = Finding.objects.filter(status="accepted", check_id__in=list(EXPOSURE_LISTS))
    for pk, check_id, evidence, severity in rows.values_list(
        "pk", "check_id", "evidence", "severity"
    ):
        basis = exposure_basis(check_id, evidence, severity)
        Finding.objects.filter(pk=pk).update(accepted_basis=basis)


def exposure_basis(check_id, evidence, severity):
    exposures = evidence.get(EXPOSURE_LISTS[check_id]) if isinstance(evidence, dict) else None
    exposures = [e for e in exposures or () if isinstance(e, dict)]
    cves = {str(c) for e in exposures for c in e.get("cves") or [e.get("advisory_id") or "?"]}
    versions = {}
    for exposure in exposures:
        if exposure.get("fixed_version"):
            component = str(exposure.get("component") or "?")
            versions.setdefault(component, []).append(str(exposure["fixed_version"]))
    return {
        "cves": sorted(cves),
        "fixes": {component: highest(found) for component, found in sorted(versions.items())},
        "severity": severity,
    }


def highest(versions):
    ordered = sorted(set(versions))
    if all(parse_version(v) for v in ordered):
        ordered.sort(key=cmp_to_key(compare))
    return ordered[-1]


class Migration(migrations.Migration):
    dependencies = [("posture", "0023_finding_tenant_exposure")]

    operations = [
        migrations.AddField(
            model_name="finding",
            name="accepted_basis",
            field=models.JSONField(blank=True, null=True),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]
