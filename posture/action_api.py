"""`/api/v1/actions/`: fix-first actions, most risk removed first, each linking to its findings."""

from __future__ import annotations

from django.db.models import QuerySet
from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from gpuposture.base.api import ScopedReadOnlyViewSet
from gpuposture.base.filters import FilterSet
from inventory.filters import cluster_filter
from inventory.presenter import PresentedSerializer
from posture.action_store import own_risk_removed, own_shares, with_own_risk
from posture.current_reads import SweepsBeforeReading
from posture.filters import check_filter
from posture.models import Action
from tenants.filters import tenant_filter


class ActionFilter(FilterSet):
    """Filters by name (DESIGN §8); `tenant` means "helps this tenant", `check` "closes a
    finding of this check"."""

    cluster = cluster_filter()
    tenant = tenant_filter(method="filter_tenant", label="Helps tenant (slug, name or id)")
    check = check_filter(method="filter_check", label="Closes findings of check id")

    class Meta:
        model = Action
        fields = ["cluster", "tenant", "check"]

    def filter_tenant(self, queryset: QuerySet, name: str, value: list[int]) -> QuerySet:
        # Resolved among the tenants the user may see, as on the findings list.
        return queryset.affecting(tenant__in=value)

    def filter_check(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        return queryset.filter(check_ids__icontains=f'"{value}"')


class ActionSerializer(PresentedSerializer):
    cluster = serializers.SlugRelatedField(slug_field="name", read_only=True)
    checks = serializers.ListField(source="check_ids", child=serializers.CharField())
    finding_ids = serializers.ListField(child=serializers.IntegerField())
    tenants = serializers.SerializerMethodField()
    risk_removed = serializers.SerializerMethodField()
    share_of_risk = serializers.SerializerMethodField()
    share_of_critical = serializers.SerializerMethodField()
    findings_url = serializers.SerializerMethodField()

    class Meta:
        model = Action
        fields = [
            "key",
            "title",
            "cluster",
            "severity",
            "checks",
            "finding_count",
            "finding_ids",
            "tenants",
            "risk_removed",
            "share_of_risk",
            "share_of_critical",
            "computed_at",
            "findings_url",
        ]

    @extend_schema_field(serializers.ListField(child=serializers.CharField()))
    def get_tenants(self, action: Action) -> list[str]:
        """Slugs of the tenants it helps (a tenant viewer sees only their own)."""
        return sorted(t.slug for t in action.tenants.all())

    @extend_schema_field(serializers.FloatField())
    def get_risk_removed(self, action: Action) -> float:
        """The risk points it removes: every tenant's for a reader who sees them all; a tenant
        viewer's own tenants' only (with_own_risk)."""
        return own_risk_removed(action)

    @extend_schema_field(serializers.FloatField())
    def get_share_of_risk(self, action: Action) -> float:
        """Percent of all open risk it removes (a tenant viewer: of their own tenants')."""
        return own_shares(action)[0]

    @extend_schema_field(serializers.FloatField())
    def get_share_of_critical(self, action: Action) -> float:
        """Percent of all open critical risk it removes (a tenant viewer: of their own)."""
        return own_shares(action)[1]

    def get_findings_url(self, action: Action) -> str:
        """The findings it closes: the findings list filtered by this action's key."""
        return f"{reverse('api:finding-list')}?action={action.key}"


class ActionViewSet(SweepsBeforeReading, ScopedReadOnlyViewSet):
    """Fix-first actions (DESIGN §5): each groups the open findings one change closes, with the
    tenants it helps and the risk points it removes (as of the last score), most first."""

    queryset = Action.objects.select_related("cluster").prefetch_related("tenants")
    serializer_class = ActionSerializer
    filterset_class = ActionFilter
    lookup_field = "key"

    def get_queryset(self) -> QuerySet:
        return with_own_risk(super().get_queryset(), self.request.user)
