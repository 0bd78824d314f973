"""REST API for trust classes and tenants."""

from __future__ import annotations

from rest_framework import serializers

from gpuposture.base.api import ScopedReadOnlyViewSet
from tenants.models import Tenant, TrustClass


class TrustClassSerializer(serializers.ModelSerializer):
    class Meta:
        model = TrustClass
        fields = [
            "id", "slug", "name", "description", "allowed_modes", "same_class_only_modes",
            "requires_dedicated_pool", "requires_reset_attestation", "approval_expiry_days",
            "rank",
        ]  # fmt: skip


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
