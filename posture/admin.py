from __future__ import annotations

from django.contrib import admin

from posture.models import CheckExemption, Finding, FindingTenant


@admin.register(CheckExemption)
class CheckExemptionAdmin(admin.ModelAdmin):
    list_display = ("check_id", "cluster", "namespace", "kind", "name", "reason", "created_by")
    list_filter = ("check_id",)

    def save_model(self, request, obj, form, change):  # type: ignore[no-untyped-def]
        if not obj.created_by_id:
            obj.created_by = request.user
        super().save_model(request, obj, form, change)


class FindingTenantInline(admin.TabularInline):
    model = FindingTenant
    extra = 0
    can_delete = False
    readonly_fields = ("tenant",)


@admin.register(Finding)
class FindingAdmin(admin.ModelAdmin):
    list_display = ("check_id", "severity", "status", "cluster", "subject_kind", "subject_name")
    list_filter = ("status", "severity", "check_id")
    readonly_fields = [f.name for f in Finding._meta.fields]
    inlines = (FindingTenantInline,)
