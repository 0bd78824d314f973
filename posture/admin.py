"""Check exemptions (audited; their author set from the signed-in user) and findings (read
only: a finding resolves when its check no longer fires, or is accepted on its page with a
reason and an expiry; it is never deleted, edited or made by hand)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from audit.admin import AuditedModelAdmin
from gpuposture.base.rescore import RescoringAdminMixin
from posture.models import CheckExemption, Finding, FindingTenant


@admin.register(CheckExemption)
class CheckExemptionAdmin(RescoringAdminMixin, AuditedModelAdmin):
    list_display = ("check_id", "cluster", "namespace", "kind", "name", "reason", "created_by")
    list_filter = ("check_id",)
    creator_fields = ("created_by",)
    readonly_fields = ("created_at",)
    rescore_reason = "exemption"
    # What posture.exemptions.Exemption.matches does, in the words of the form's reader.
    fieldsets = (
        (None, {"fields": ("check_id", "cluster", "reason")}),
        (
            "What it covers",
            {
                "description": (
                    "Empty fields match anything; fill at least one. A name may be the "
                    "finding's subject or any object of its pods' owner chain as kubectl shows "
                    "it (a ReplicaSet, a Job, a RayCluster, a Pod): it then covers the "
                    "workload's finding while every pod the finding reports is under that "
                    "object. Without a name, kind and namespace are the finding's subject's. "
                    "Labels are matched on the subject (a workload's pod template)."
                ),
                "fields": ("namespace", "kind", "name", "labels"),
            },
        ),
        (None, {"fields": ("created_by", "created_at")}),
    )

    def rescore_scope(self, obj: CheckExemption) -> dict[str, Any]:
        # An exemption without a cluster applies to every cluster.
        return {"clusters": [obj.cluster_id]} if obj.cluster_id else {"everything": True}


class FindingTenantInline(admin.TabularInline):
    model = FindingTenant
    extra = 0
    can_delete = False
    readonly_fields = ("tenant",)

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # the checks decide which tenants a finding affects

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Finding)
class FindingAdmin(admin.ModelAdmin):
    list_display = ("check_id", "severity", "status", "cluster", "subject_kind", "subject_name")
    list_filter = ("status", "severity", "check_id")
    readonly_fields = [f.name for f in Finding._meta.fields]
    inlines = (FindingTenantInline,)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # read only: acceptance has its own page, reason and audit event

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Deleting would erase the finding's history and drop it from the scores unseen.
        return False
