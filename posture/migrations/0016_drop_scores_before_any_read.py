"""Drop the scores stored by score runs before any cluster had been read: each said risk 0,
score 100, grade A for tenants nothing was known about (the latest of them showed as the
tenant's score, and each was a point of its trend). posture_evaluate no longer stores them."""

from __future__ import annotations

from django.db import migrations


def drop_scores_before_any_read(apps, schema_editor) -> None:
    PostureRun = apps.get_model("posture", "PostureRun")
    TenantScore = apps.get_model("posture", "TenantScore")
    # A run's `clusters` are those it judged (a good sync each); no finding exists before the
    # first such run, so every score before it read nothing.
    first_read = None
    for pk, clusters in PostureRun.objects.order_by("id").values_list("id", "clusters").iterator():
        if clusters:
            first_read = pk
            break
    blind = TenantScore.objects.all()
    if first_read is not None:
        blind = blind.filter(run_id__lt=first_read)
    blind.delete()


class Migration(migrations.Migration):
    dependencies = [("posture", "0015_earlier_acceptance")]

    operations = [migrations.RunPython(drop_scores_before_any_read, migrations.RunPython.noop)]
