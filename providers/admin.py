from __future__ import annotations

from typing import Any

from django.contrib import admin

from audit.admin import AuditedModelAdmin
from gpuposture.base.rescore import RescoringAdminMixin
from providers.models import Provider


@admin.register(Provider)
class ProviderAdmin(RescoringAdminMixin, AuditedModelAdmin):
    """Adds, changes and deletes are audit events. Deleting a provider unlinks its clusters
    (their PROV-001/002 findings go), so its clusters are re-scored."""

    list_display = ("slug", "name", "contact_email")
    search_fields = ("slug", "name")
    rescore_reason = "provider"

    def rescore_scope(self, obj: Provider) -> dict[str, Any]:
        # Named before the delete: afterwards no cluster points at the provider any more.
        return {"clusters": list(obj.clusters.values_list("pk", flat=True))} if obj.pk else {}
