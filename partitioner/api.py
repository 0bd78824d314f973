"""The MIG partitioner's API: `POST /api/v1/mig/validate/` (DESIGN §8, plus compute instances)
and `GET /api/v1/mig/node-layout/` (the layout a node's mig-parted config gives its GPUs)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from gpuposture.base.permissions import AnyRolePermission
from inventory.mig_profiles import MODELS
from partitioner.compute import ComputeRequest
from partitioner.config import NodeLayout, export_name, mig_parted_yaml
from partitioner.layout import InstanceRequest, LayoutResult, validate_layout
from partitioner.selectors import mig_node_layout, mig_tenant_classes

MAX_INSTANCES = 16
MAX_COMPUTE_INSTANCES = 8


def layout_for(user: Any, gpu_model: str, instances: list[InstanceRequest]) -> LayoutResult:
    """Validate with the trust classes of the tenants this user may see."""
    return validate_layout(gpu_model, instances, mig_tenant_classes(user=user))


def result_json(result: LayoutResult, config_name: str | None = None) -> dict[str, Any]:
    """DESIGN §8's answer (valid, placements, errors, warnings) and what the page draws."""
    gpu = MODELS.get(result.model or "")
    return {
        "valid": result.valid,
        "model": result.model,
        "placements": [
            {
                "profile": p.profile,
                "start": p.start,
                "size": p.size,
                "tenant": p.tenant,
                "index": p.index,
                "compute_instances": [
                    {"profile": c.profile, "slices": c.slices, "tenant": c.tenant}
                    for c in p.compute_instances
                ],
            }
            for p in result.placements
        ],
        "errors": result.errors,
        "warnings": result.warnings,
        "warning_details": [
            {
                "check": w.check,
                "message": w.message,
                "tenants": list(w.tenants),
                "mode": w.mode,
                "instance": w.instance,
            }
            for w in result.warning_details
        ],
        "compute_slices_used": result.compute_slices_used,
        "memory_slices_used": result.memory_slices_used,
        "compute_slices": gpu.compute_slices if gpu else None,
        "memory_slices": gpu.memory_slots if gpu else None,
        "config_name": export_name(config_name),
        "mig_parted": (
            mig_parted_yaml(export_name(config_name), result.placements) if result.valid else None
        ),
    }


def requests_json(instances: tuple[InstanceRequest, ...] | list[InstanceRequest]) -> list[dict]:
    """Instance requests as the validate endpoint takes them."""
    return [
        {
            "profile": r.profile,
            "start": r.start,
            "tenant": r.tenant,
            "compute_instances": [
                {"profile": c.profile, "tenant": c.tenant} for c in r.compute_instances
            ],
        }
        for r in instances
    ]


def node_layout_json(layout: NodeLayout) -> dict[str, Any]:
    return {
        "config_name": layout.config_name,
        "source": layout.source,
        "device": layout.device,
        "mig_enabled": layout.mig_enabled,
        "notes": list(layout.notes),
        "instances": requests_json(layout.instances),
    }


class ComputeInstanceSerializer(serializers.Serializer):
    profile = serializers.CharField(max_length=40)
    tenant = serializers.SlugField(required=False, allow_null=True, max_length=63)


class InstanceSerializer(serializers.Serializer):
    profile = serializers.CharField(max_length=40)
    start = serializers.IntegerField(required=False, allow_null=True, min_value=0, max_value=7)
    tenant = serializers.SlugField(required=False, allow_null=True, max_length=63)
    # many=True hands max_length to DRF's ListSerializer; the stubs' __init__ does not list it.
    compute_instances = ComputeInstanceSerializer(  # type: ignore[call-arg]
        many=True, required=False, max_length=MAX_COMPUTE_INSTANCES
    )


class LayoutRequestSerializer(serializers.Serializer):
    gpu_model = serializers.CharField(max_length=120)
    instances = InstanceSerializer(many=True, max_length=MAX_INSTANCES)  # type: ignore[call-arg]
    config_name = serializers.CharField(required=False, max_length=63, allow_blank=True)


def to_requests(rows: list[dict[str, Any]]) -> list[InstanceRequest]:
    return [
        InstanceRequest(
            profile=row["profile"],
            start=row.get("start"),
            tenant=row.get("tenant") or None,
            compute_instances=tuple(
                ComputeRequest(ci["profile"], ci.get("tenant") or None)
                for ci in row.get("compute_instances") or ()
            ),
        )
        for row in rows
    ]


class MigValidateView(APIView):
    """Place MIG GPU instances (and their compute instances) on a GPU model following NVIDIA's
    placement rules, with the SHARE-002 / SHARE-003 warnings the tenants' trust classes raise.
    An unknown model or profile, or a layout that does not fit, is an error in the answer."""

    permission_classes = [AnyRolePermission]

    @extend_schema(request=LayoutRequestSerializer, responses=dict)
    def post(self, request: Request) -> Response:
        body = LayoutRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        result = layout_for(request.user, data["gpu_model"], to_requests(data["instances"]))
        return Response(result_json(result, data.get("config_name")))


class NodeLayoutQuerySerializer(serializers.Serializer):
    cluster = serializers.CharField(max_length=63)
    node = serializers.CharField(max_length=253)
    device = serializers.IntegerField(required=False, default=0, min_value=0, max_value=15)


class MigNodeLayoutView(APIView):
    """The layout a node's `nvidia.com/mig.config` names in its cluster's mig-parted config,
    placed like a validate request; 404 for a node that is absent or that you may not see."""

    permission_classes = [AnyRolePermission]

    @extend_schema(
        parameters=[
            OpenApiParameter("cluster", str, required=True),
            OpenApiParameter("node", str, required=True),
            OpenApiParameter("device", int, description="GPU index on the node (default 0)"),
        ],
        responses=dict,
    )
    def get(self, request: Request) -> Response:
        query = NodeLayoutQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        q = query.validated_data
        found = mig_node_layout(
            user=request.user, cluster=q["cluster"], node=q["node"], device=q["device"]
        )
        if found.node is None or found.layout is None:
            return Response({"detail": found.error}, status=404)
        return Response(node_answer(request.user, found.node, found.layout))


def node_answer(user: Any, node: Any, layout: NodeLayout) -> dict[str, Any]:
    """The node-layout answer: the validate shape, plus the node and the config it came from."""
    base = {"cluster": node.cluster.name, "node": node.name, "gpu_model": node.gpu_model}
    if layout.error or layout.model is None:
        empty = LayoutResult(valid=False, errors=[layout.error or "no layout"], model=layout.model)
        return base | result_json(empty, layout.config_name) | node_layout_json(layout)
    result = layout_for(user, layout.model, list(layout.instances))
    answer = base | result_json(result, layout.config_name) | node_layout_json(layout)
    if not layout.mig_enabled:
        answer["mig_parted"] = None  # MIG off: there is no layout to export
    return answer
