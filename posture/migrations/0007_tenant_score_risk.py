"""Scores gain risk points (DESIGN §6), and the score becomes 100 x exp(-risk/K), no floor.

Stored scores are re-expressed so the trend stays one curve: each row's risk is recomputed
from its own contributions (the live findings it listed; accepted ones count 0) with the
tenant's class weight and the finding's exposure as they are now (1 if the finding is gone).
Frozen here on purpose: a data migration must not change when posture/scoring.py does.
"""

import math

from django.db import migrations, models

SEVERITY_WEIGHTS = {"critical": 40, "high": 15, "medium": 5, "low": 1}
K = 2500.0
GRADE_THRESHOLDS = (("A", 90), ("B", 80), ("C", 70), ("D", 60))
GRADE_CAPS = (("critical", "F"), ("high", "C"))
GRADES = "ABCDF"


def _shown(raw):
    if raw >= 10:
        return float(math.floor(raw))
    if raw >= 0.1:
        return math.floor(raw * 10) / 10
    if raw < 1e-300:
        return max(raw, math.ulp(0.0))
    scale = 10.0 ** (1 - math.floor(math.log10(raw)))
    return math.floor(raw * scale) / scale


def _rescore(old, weight, exposures):
    counted = []
    for c in old.contributions:
        if c.get("reason") == "risk accepted" or c.get("severity") not in SEVERITY_WEIGHTS:
            continue
        exposure = max(exposures.get(c.get("finding_id"), 1), 1)
        factor = 1 + math.log2(exposure) if exposure > 1 else 1.0
        points = round(SEVERITY_WEIGHTS[c["severity"]] * weight * factor, 2)
        counted.append({**c, "exposure": exposure, "points": points})
    risk = round(sum(c["points"] for c in counted), 2)
    counted.sort(key=lambda c: (-c["points"], c.get("check", ""), str(c.get("finding_id"))))
    for c in counted:
        c["share"] = round(100 * c["points"] / risk, 1) if risk else 0.0
        c["reason"] = f"open {c['severity']} (recomputed from an earlier score)"
    score = _shown(100 * math.exp(-risk / K)) if risk else 100.0
    grade = next((g for g, low in GRADE_THRESHOLDS if score >= low), "F")
    for severity, ceiling in GRADE_CAPS:
        if any(c["severity"] == severity for c in counted):
            grade = max(grade, ceiling, key=GRADES.index)
            break
    return risk, score, grade, counted


def forwards(apps, schema_editor):
    TenantScore = apps.get_model("posture", "TenantScore")
    Finding = apps.get_model("posture", "Finding")
    TrustClass = apps.get_model("tenants", "TrustClass")
    Tenant = apps.get_model("tenants", "Tenant")
    weights = dict(TrustClass.objects.values_list("pk", "risk_weight"))
    tenant_weight = {pk: weights[tc] for pk, tc in Tenant.objects.values_list("pk", "trust_class")}
    exposures = dict(Finding.objects.values_list("pk", "exposure"))
    for old in TenantScore.objects.iterator(chunk_size=2000):
        risk, score, grade, contributions = _rescore(
            old, tenant_weight.get(old.tenant_id, 1.0), exposures
        )
        old.risk, old.score, old.grade, old.contributions = risk, score, grade, contributions
        old.save(update_fields=["risk", "score", "grade", "contributions"])


class Migration(migrations.Migration):
    dependencies = [
        ("posture", "0006_finding_tenant_drop"),
        ("tenants", "0005_trust_class_risk_weight"),
    ]

    operations = [
        migrations.AddField(
            model_name="tenantscore", name="risk", field=models.FloatField(default=0)
        ),
        migrations.AlterField(model_name="tenantscore", name="score", field=models.FloatField()),
        migrations.RunPython(forwards, migrations.RunPython.noop),
    ]
