"""REST API for the patch SLA (days per severity; security leads change it)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from gpuposture.base.roles import SECURITY_LEAD
from inventory.patching.sla import MAX_DAYS, MIN_DAYS, PatchSlaError, patch_sla_rows, patch_sla_save


class PatchSlaRowSerializer(serializers.Serializer):
    severity = serializers.CharField()
    days = serializers.IntegerField()
    default_days = serializers.IntegerField()
    updated_by = serializers.CharField()
    updated_at = serializers.DateTimeField(allow_null=True)


class PatchSlaChangeSerializer(serializers.Serializer):
    critical = serializers.IntegerField(min_value=MIN_DAYS, max_value=MAX_DAYS, required=False)
    high = serializers.IntegerField(min_value=MIN_DAYS, max_value=MAX_DAYS, required=False)
    medium = serializers.IntegerField(min_value=MIN_DAYS, max_value=MAX_DAYS, required=False)
    low = serializers.IntegerField(min_value=MIN_DAYS, max_value=MAX_DAYS, required=False)


class PatchSlaView(APIView):
    """Days allowed from a bulletin's release to patched nodes, per severity (STACK-005).
    PATCH `{"critical": 5}` (security lead) changes the given severities and re-scores."""

    write_roles = (SECURITY_LEAD,)

    @extend_schema(responses=PatchSlaRowSerializer(many=True))
    def get(self, request: Request) -> Response:
        return Response(PatchSlaRowSerializer(patch_sla_rows(), many=True).data)

    @extend_schema(request=PatchSlaChangeSerializer, responses=PatchSlaRowSerializer(many=True))
    def patch(self, request: Request) -> Response:
        change = PatchSlaChangeSerializer(data=request.data)
        change.is_valid(raise_exception=True)
        unknown = (
            set(request.data) - set(change.fields) if isinstance(request.data, dict) else set()
        )
        if unknown or not change.validated_data:
            return Response(
                {"detail": "give days for one or more of: critical, high, medium, low"},
                status=status.HTTP_400_BAD_REQUEST,
            )
        try:
            patch_sla_save(days=change.validated_data, actor=request.user.get_username())
        except PatchSlaError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        return Response(PatchSlaRowSerializer(patch_sla_rows(), many=True).data)
