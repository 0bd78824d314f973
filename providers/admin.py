from __future__ import annotations

from django.contrib import admin

from providers.models import Provider


@admin.register(Provider)
class ProviderAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "contact_email")
    search_fields = ("slug", "name")
