"""REST API for the audit log: read-only, for auditors and security leads."""

from __future__ import annotations

from rest_framework import serializers
from rest_framework.permissions import SAFE_METHODS, BasePermission

from audit.filters import AuditEventFilter
from audit.models import AuditEvent
from gpuposture.base.api import ScopedReadOnlyViewSet
from gpuposture.base.roles import reads_audit_log


class AuditLogPermission(BasePermission):
    """Not the project-wide role check: other roles get a refusal, not an empty list."""

    message = "The audit log is for the auditor and security_lead roles; ask an administrator."

    def has_permission(self, request, view) -> bool:
        return request.method in SAFE_METHODS and reads_audit_log(request.user)


class AuditEventSerializer(serializers.ModelSerializer):
    actor = serializers.CharField(source="actor_name", read_only=True)

    class Meta:
        model = AuditEvent
        fields = [
            "id",
            "time",
            "actor",
            "action",
            "object_type",
            "object_id",
            "object_repr",
            "before",
            "after",
            "request_id",
            "prev_hash",
            "hash",
        ]


class AuditEventViewSet(ScopedReadOnlyViewSet):
    """Audit events, newest first; filter by actor (username), action, object_type, object_id,
    since / until (ISO 8601) and request_id."""

    queryset = AuditEvent.objects.order_by("-id")
    serializer_class = AuditEventSerializer
    filterset_class = AuditEventFilter
    permission_classes = [AuditLogPermission]
