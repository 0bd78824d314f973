"""API: GET /api/v1/clusters/{name}/policy-pack/ and its preview/ (DESIGN §8)."""

from __future__ import annotations

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, serializers
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from enforcement.inputs import DIALECTS, MODES
from enforcement.packs import PackError
from enforcement.report import PackReport, pack_report
from gpuposture.base.api import NameOrIdLookupMixin
from gpuposture.base.roles import reads_all_posture
from inventory.models import Cluster

PACK_READERS_ONLY = (
    "A policy pack names every tenant's namespaces and principals: only security leads, "
    "platform engineers and auditors may read it. The preview/ endpoint lists your namespaces."
)

_PARAMS = [
    OpenApiParameter("dialect", enum=list(DIALECTS), default="vap"),
    OpenApiParameter("mode", enum=list(MODES), default="audit"),
]


class PreviewRowSerializer(serializers.Serializer):
    namespace = serializers.CharField()
    kind = serializers.CharField()
    name = serializers.CharField()
    rule = serializers.CharField()
    check = serializers.CharField()
    message = serializers.CharField()


class _ClusterPackView(NameOrIdLookupMixin, generics.GenericAPIView):
    queryset = Cluster.objects.all()
    lookup_field = "name"
    pagination_class = None

    def get_queryset(self):
        return Cluster.objects.visible_to(self.request.user)

    def report(self, request: Request) -> PackReport:
        cluster = self.get_object()
        try:
            return pack_report(
                cluster,
                dialect=request.query_params.get("dialect", "vap"),
                mode=request.query_params.get("mode", "audit"),
                user=request.user,
            )
        except PackError as exc:
            raise ValidationError({"detail": str(exc)}) from exc


class PolicyPackView(_ClusterPackView):
    """The cluster's admission policy pack: multi-document YAML, or `{"items": [...]}` with
    `?format=json`."""

    @extend_schema(
        parameters=[*_PARAMS, OpenApiParameter("format", enum=["yaml", "json"], default="yaml")],
        responses={200: OpenApiTypes.STR},
    )
    def get(self, request: Request, name: str) -> Response | HttpResponse:
        if not reads_all_posture(request.user):
            raise PermissionDenied(PACK_READERS_ONLY)
        kind = request.query_params.get("format", "yaml")
        if kind not in ("yaml", "json"):
            raise ValidationError({"detail": "format must be yaml or json"})
        report = self.report(request)
        if kind == "json":
            return Response({"items": report.objects})
        response = HttpResponse(report.yaml, content_type="application/yaml; charset=utf-8")
        response["ETag"] = f'"{report.sha256}"'
        return response


class PolicyPackPreviewView(_ClusterPackView):
    """The workloads the pack would deny today (a tenant viewer sees their namespaces only)."""

    @extend_schema(parameters=_PARAMS, responses=PreviewRowSerializer(many=True))
    def get(self, request: Request, name: str) -> Response:
        report = self.report(request)
        return Response(PreviewRowSerializer(report.rows, many=True).data)
