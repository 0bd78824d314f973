"""REST API: utilisation (the page's numbers) and reset attestations."""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, serializers, viewsets
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from gpuposture.base.api import ScopedViewSetMixin
from gpuposture.base.filters import resolve_named
from gpuposture.base.roles import RECORD_RESETS
from inventory.models import Cluster
from inventory.presenter import PresentedSerializer
from telemetry.filters import ResetAttestationFilter
from telemetry.models import ResetAttestation
from telemetry.selectors import (
    Period,
    chargeback,
    idle_allocated,
    tenant_days,
    top_gpus,
    under_way,
)
from telemetry.services import reset_attestation_record
from tenants.models import Tenant


class UtilisationQuerySerializer(serializers.Serializer):
    days = serializers.ChoiceField(
        choices=[7, 30, 90],
        default=30,
        error_messages={"invalid_choice": "{input!r} is not accepted for days; give 7, 30 or 90."},
    )
    cluster = serializers.CharField(required=False, allow_blank=True, max_length=63)


def _cluster_name(request: Request, value: str | None) -> str | None:
    """The cluster named by name or id (DESIGN §8); one the user may not see, or that does
    not exist, is a 400 naming it, not an empty answer that reads as "no GPU use"."""
    if not value:
        return None
    try:
        pks = resolve_named(
            Cluster.objects.all(),
            value,
            user=request.user,
            noun="cluster",
            names=("name",),
            listing="GET /api/v1/clusters/",
        )
    except DjangoValidationError as exc:
        raise ValidationError({"cluster": exc.messages}) from exc
    return Cluster.objects.filter(pk__in=pks).first().name  # by name first: Meta.ordering


class UtilisationView(APIView):
    """GPU-hours and MIG-slice-hours per tenant per day, the chargeback totals, the busiest
    GPUs and idle allocated GPUs: the utilisation page's numbers, each with its confidence.
    `partial_from`: the start of the hour under way, rolled up from the samples so far; the
    day it falls in is `partial` in tenant_days (its figures grow as samples arrive).
    `busy_gpu_hours` is null for MIG time alone: DCGM-Exporter has no utilisation per MIG
    instance. `tenant` is the slug; `tenant_name` what the pages show."""

    @extend_schema(
        parameters=[
            OpenApiParameter("days", int, enum=[7, 30, 90]),
            OpenApiParameter("cluster", str),
        ],
        responses=dict,
    )
    def get(self, request: Request) -> Response:
        query = UtilisationQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        period = Period(
            days=query.validated_data["days"],
            cluster=_cluster_name(request, query.validated_data.get("cluster")),
        )
        days = tenant_days(request.user, period)
        return Response(
            {
                "days": period.days,
                "since": period.since,
                "cluster": period.cluster,
                "partial_from": under_way(),
                "tenant_days": days,
                "chargeback": chargeback(days),
                "top_gpus": top_gpus(request.user, period),
                "idle_allocated": idle_allocated(request.user, period),
            }
        )


class ResetAttestationSerializer(PresentedSerializer):
    cluster = serializers.SlugRelatedField(slug_field="name", queryset=Cluster.objects.all())
    previous_tenant = serializers.SlugRelatedField(
        slug_field="slug", queryset=Tenant.objects.all(), required=False, allow_null=True
    )
    next_tenant = serializers.SlugRelatedField(
        slug_field="slug", queryset=Tenant.objects.all(), required=False, allow_null=True
    )

    class Meta:
        model = ResetAttestation
        fields = [
            "id",
            "cluster",
            "node",
            "gpu_uuid",
            "reset_at",
            "method",
            "previous_tenant",
            "next_tenant",
            "note",
            "recorded_by",
            "recorded_at",
        ]
        read_only_fields = ["recorded_by", "recorded_at"]
        # DRF's own message ("is not a valid choice") leaves the caller guessing the values.
        extra_kwargs = {
            "method": {
                "error_messages": {
                    "invalid_choice": '"{input}" is not a reset method: one of '
                    + ", ".join(ResetAttestation.Method.values)
                }
            }
        }

    def validate(self, attrs: dict) -> dict:
        cluster, node = attrs.get("cluster"), attrs.get("node")
        if cluster and node and not cluster.nodes.filter(name=node).exists():
            raise serializers.ValidationError({"node": f"{cluster.name} has no node {node!r}"})
        return attrs

    def create(self, validated_data: dict) -> ResetAttestation:
        actor = self.context["request"].user.get_username()
        return reset_attestation_record(attestation=ResetAttestation(**validated_data), actor=actor)


class ResetAttestationViewSet(
    ScopedViewSetMixin, mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet
):
    """Records that a GPU (or a node's GPUs) was reset between tenants (LEAK-001 evidence)."""

    queryset = ResetAttestation.objects.select_related("cluster", "previous_tenant", "next_tenant")
    serializer_class = ResetAttestationSerializer
    write_roles = RECORD_RESETS
    filterset_class = ResetAttestationFilter
