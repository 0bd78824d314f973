"""Filters shared by the sharing-request pages and API (STYLE rule 8)."""

from __future__ import annotations

import django_filters
from django.db.models import Q, QuerySet
from django.utils import timezone

from tenants.models import SharingRequest
from tenants.policy import SHARING_MODES

STATE_CHOICES = [
    ("pending", "Pending"),
    ("active", "Approved and active"),
    ("expired", "Approved, expired"),
    ("denied", "Denied"),
    ("revoked", "Revoked"),
]


class SharingRequestFilter(django_filters.FilterSet):
    tenant = django_filters.CharFilter(field_name="tenant__slug", label="Tenant slug")
    cluster = django_filters.CharFilter(field_name="cluster__name", label="Cluster name")
    mode = django_filters.ChoiceFilter(choices=[(m, m) for m in SHARING_MODES])
    state = django_filters.ChoiceFilter(choices=STATE_CHOICES, method="filter_state", label="State")

    class Meta:
        model = SharingRequest
        fields = ["tenant", "cluster", "mode", "state", "node_pool"]

    def filter_state(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        now = timezone.now()
        approved = Q(status=SharingRequest.Status.APPROVED)
        unexpired = Q(expires_at__isnull=True) | Q(expires_at__gt=now)
        if value == "active":
            return queryset.filter(approved & unexpired)
        if value == "expired":
            return queryset.filter(approved, expires_at__lte=now)
        return queryset.filter(status=value)
