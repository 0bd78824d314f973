"""The patch SLA per severity (registered through inventory/models.py)."""

from __future__ import annotations

from django.db import models


class PatchSla(models.Model):
    """Days allowed from a bulletin's release to patched nodes, per severity (STACK-005).

    A severity without a row uses the deployment default (GPUPOSTURE_PATCH_SLA_<SEV>_DAYS)."""

    class Severity(models.TextChoices):
        CRITICAL = "critical"
        HIGH = "high"
        MEDIUM = "medium"
        LOW = "low"

    severity = models.CharField(max_length=10, choices=Severity.choices, unique=True)
    days = models.PositiveIntegerField()
    updated_by = models.CharField(max_length=150, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = models.Manager()

    def __str__(self) -> str:
        return f"{self.severity}: {self.days} days"
