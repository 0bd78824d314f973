"""GET /api/v1/clusters/{name}/vex/?format=openvex|csaf: the cluster's VEX document."""

from __future__ import annotations

import json

from django.http import HttpResponse
from django.utils import timezone
from django.utils.text import slugify
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics
from rest_framework.request import Request
from rest_framework.response import Response

from gpuposture.base.api import NameOrIdLookupMixin
from inventory.bulletins.vex.selectors import (
    VEX_FORMATS,
    NoStatements,
    cluster_vex_statements,
    vex_document,
)
from inventory.models import Cluster


class ClusterVexView(NameOrIdLookupMixin, generics.GenericAPIView):
    """The VEX of one cluster's GPU nodes: for each vulnerability an imported bulletin names
    and each node component, affected (with the upgrade), fixed, not affected with the
    standard justification, or under investigation with why (such as a version not read).
    `format=openvex` (default) or `csaf` (CSAF 2.0, csaf_vex)."""

    queryset = Cluster.objects.all()
    lookup_field = "name"
    pagination_class = None

    def get_queryset(self):
        return Cluster.objects.visible_to(self.request.user)

    @extend_schema(
        parameters=[OpenApiParameter("format", enum=list(VEX_FORMATS), default="openvex")],
        responses={(200, "application/json"): dict},
    )
    def get(self, request: Request, name: str) -> HttpResponse:
        kind = request.query_params.get("format", "openvex")
        if kind not in VEX_FORMATS:
            return Response({"detail": "format must be openvex or csaf"}, status=400)
        cluster = self.get_object()
        statements = cluster_vex_statements(cluster=cluster, user=request.user)
        try:
            document = vex_document(
                kind,
                cluster=cluster,
                statements=statements,
                now=timezone.now(),
                base_url=request.build_absolute_uri("/"),
            )
        except NoStatements as exc:
            return Response({"detail": str(exc)}, status=404)
        content_type, suffix = VEX_FORMATS[kind]
        response = HttpResponse(
            json.dumps(document, indent=2), content_type=f"{content_type}; charset=utf-8"
        )
        filename = f"{slugify(cluster.name) or 'cluster'}-{suffix}"
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        return response
