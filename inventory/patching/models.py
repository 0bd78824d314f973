"""The patch SLA per severity (registered through inventory/models.py)."""

from __future__ import annotations

from django.db import models

from gpuposture.base import enums
from gpuposture.base.choices import text_choices


class PatchSla(models.Model):
    """Days allowed from a bulletin's release to patched nodes, per severity (STACK-005).

    A severity without a row uses the deployment default (GPUPOSTURE_PATCH_SLA_<SEV>_DAYS)."""

    # Labels as Django derived them from the names ("Critical"): the migrations recorded those.
    Severity = text_choices(enums.Severity, label=str.title)

    severity = models.CharField(max_length=10, choices=Severity.choices, unique=True)
    days = models.PositiveIntegerField()
    updated_by = models.CharField(max_length=150, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = models.Manager()

    def __str__(self) -> str:
        return f"{self.severity}: {self.days} days"
