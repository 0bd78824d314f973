"""Generated policy packs, kept so the page can show what changed since the last one."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class GeneratedPack(models.Model):
    """One generated admission policy pack (its YAML and hash), stored when it changed."""

    class Dialect(models.TextChoices):
        VAP = "vap", "ValidatingAdmissionPolicy"
        KYVERNO = "kyverno", "Kyverno ClusterPolicy"

    class Mode(models.TextChoices):
        AUDIT = "audit", "Audit"
        ENFORCE = "enforce", "Enforce"

    cluster = models.ForeignKey(
        "inventory.Cluster", on_delete=models.CASCADE, related_name="policy_packs"
    )
    dialect = models.CharField(max_length=10, choices=Dialect.choices)
    mode = models.CharField(max_length=10, choices=Mode.choices)
    content = models.TextField(help_text="The pack as multi-document YAML.")
    sha256 = models.CharField(max_length=64)
    generated_at = models.DateTimeField(auto_now_add=True)
    generated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )

    class Meta:
        ordering = ["-generated_at", "-id"]
        indexes = [
            models.Index(fields=["cluster", "dialect", "mode", "-generated_at"], name="pack_latest")
        ]

    def __str__(self) -> str:
        return f"{self.cluster_id} {self.dialect}/{self.mode} {self.sha256[:12]}"
