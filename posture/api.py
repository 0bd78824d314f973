"""REST API for findings and tenant posture."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from gpuposture.base.api import ScopedReadOnlyViewSet
from posture.filters import FindingFilter
from posture.models import Finding
from posture.selectors import hidden_scope_for, tenant_posture
from posture.serializers import FindingSerializer, PostureSerializer
from tenants.api import TenantViewSet


class FindingViewSet(ScopedReadOnlyViewSet):
    queryset = Finding.objects.select_related("tenant", "cluster")
    serializer_class = FindingSerializer
    filterset_class = FindingFilter

    def get_serializer_context(self) -> dict:
        return {
            **super().get_serializer_context(),
            "hidden_scope": hidden_scope_for(self.request.user),
        }


class TenantPostureViewSet(TenantViewSet):
    """Tenants, plus each tenant's posture: score, grade, contributions and live findings."""

    @extend_schema(responses=PostureSerializer)
    @action(detail=True, methods=["get"])
    def posture(self, request: Request, pk: str | None = None) -> Response:
        tenant = self.get_object()
        context = {"hidden_scope": hidden_scope_for(request.user)}
        return Response(PostureSerializer(tenant_posture(tenant), context=context).data)
