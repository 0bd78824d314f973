from __future__ import annotations

from django.contrib import admin

from tenants.models import Tenant, TenantNamespace, TenantPrincipal, TrustClass


@admin.register(TrustClass)
class TrustClassAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "allowed_modes", "requires_dedicated_pool", "rank")


class NamespaceInline(admin.TabularInline):
    model = TenantNamespace
    extra = 0


class PrincipalInline(admin.TabularInline):
    model = TenantPrincipal
    extra = 0


@admin.register(Tenant)
class TenantAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "trust_class")
    list_filter = ("trust_class",)
    search_fields = ("slug", "name")
    inlines = [NamespaceInline, PrincipalInline]
    filter_horizontal = ("viewers",)
