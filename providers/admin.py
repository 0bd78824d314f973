from __future__ import annotations

from django.contrib import admin

from audit.admin import AuditedModelAdmin
from providers.models import Provider


@admin.register(Provider)
class ProviderAdmin(AuditedModelAdmin):
    """Adds, changes and deletes are audit events."""

    list_display = ("slug", "name", "contact_email")
    search_fields = ("slug", "name")
