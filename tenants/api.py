"""REST API for trust classes and tenants (sharing requests: sharing/api.py)."""

from __future__ import annotations

from django.db.models import Q
from rest_framework import serializers

from gpuposture.base.api import ScopedReadOnlyViewSet
from tenants.models import Tenant, TrustClass


class TrustClassSerializer(serializers.ModelSerializer):
    class Meta:
        model = TrustClass
        fields = [
            "id",
            "slug",
            "name",
            "description",
            "allowed_modes",
            "same_class_only_modes",
            "requires_dedicated_pool",
            "requires_reset_attestation",
            "approval_expiry_days",
            "rank",
            "risk_weight",
        ]


class TenantSerializer(serializers.ModelSerializer):
    trust_class = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    namespaces = serializers.SlugRelatedField(slug_field="name", many=True, read_only=True)
    principals = serializers.SerializerMethodField()

    class Meta:
        model = Tenant
        fields = ["id", "slug", "name", "trust_class", "namespaces", "principals"]

    def get_principals(self, tenant: Tenant) -> list[str]:
        return [f"{p.kind}:{p.name}" for p in tenant.principals.all()]


class TrustClassViewSet(ScopedReadOnlyViewSet):
    queryset = TrustClass.objects.all()
    serializer_class = TrustClassSerializer
    lookup_field = "slug"
    lookup_value_regex = "[a-z0-9_]+"


class TenantViewSet(ScopedReadOnlyViewSet):
    queryset = Tenant.objects.select_related("trust_class").prefetch_related(
        "namespaces", "principals"
    )
    serializer_class = TenantSerializer
    filterset_fields = {"trust_class__slug": ["exact"]}

    def get_queryset(self):
        # The system tenant `unclassified` is listed only while unclaimed namespaces give it
        # open findings, as on the overview: where nothing is unclassified it says nothing.
        judged = Tenant.objects.filter(is_system=True, findings__status="open").values("pk")
        return super().get_queryset().exclude(Q(is_system=True) & ~Q(pk__in=judged))
