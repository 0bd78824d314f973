from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db import models

from audit.admin import AuditedModelAdmin
from gpuposture.base.rescore import RescoringAdminMixin
from tenants.audit_state import tenants_audit_state
from tenants.models import Tenant, TenantNamespace, TenantPrincipal, TrustClass


class TenantsAuditedAdmin(RescoringAdminMixin, AuditedModelAdmin):
    """Changes made here are audit events, in the same shape tenants_apply records, and
    re-score every cluster (a class or a namespace mapping moves any cluster's findings)."""

    rescore_reason = "tenants"

    def audit_state(self, obj: models.Model) -> dict[str, Any]:
        return tenants_audit_state(obj)


@admin.register(TrustClass)
class TrustClassAdmin(TenantsAuditedAdmin):
    list_display = (
        "slug",
        "name",
        "allowed_modes",
        "requires_dedicated_pool",
        "pool_taints",
        "rank",
        "risk_weight",
    )
    list_editable = ("risk_weight",)


class NamespaceInline(admin.TabularInline):
    model = TenantNamespace
    extra = 0


class PrincipalInline(admin.TabularInline):
    model = TenantPrincipal
    extra = 0


@admin.register(Tenant)
class TenantAdmin(TenantsAuditedAdmin):
    list_display = ("slug", "name", "trust_class", "is_system")
    list_filter = ("trust_class",)
    search_fields = ("slug", "name")
    inlines = [NamespaceInline, PrincipalInline]
    filter_horizontal = ("viewers",)
    readonly_fields = ("declared_viewers",)

    @admin.display(description="viewers the tenants file declares")
    def declared_viewers(self, obj: Tenant) -> str:
        # The names without an account yet are not in the list above: they get the tenant
        # when their account is created (tenants.signals); the file changes them.
        return ", ".join(obj.viewer_names.values_list("username", flat=True)) or "-"

    def has_change_permission(self, request: Any, obj: Tenant | None = None) -> bool:
        # The system tenant `unclassified` is kept by gpuposture: claim a namespace for a real
        # tenant, or list it as the platform's, instead of editing it.
        if obj is not None and obj.is_system:
            return False
        return super().has_change_permission(request, obj)

    def has_delete_permission(self, request: Any, obj: Tenant | None = None) -> bool:
        if obj is not None and obj.is_system:
            return False
        return super().has_delete_permission(request, obj)

    def audit_cascades(self, obj: Tenant) -> list[models.Model]:  # type: ignore[override]  # registered for Tenant only
        # Deleting a tenant removes its namespace and principal mappings: each is an event.
        return [*obj.namespaces.all(), *obj.principals.all()]
