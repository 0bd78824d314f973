"""Filters shared by the sharing-request pages and API (STYLE rule 8)."""

from __future__ import annotations

import django_filters
from django.db.models import QuerySet
from django.utils import timezone

from gpuposture.base.filters import FilterSet
from inventory.filters import cluster_filter
from tenants.filters import tenant_filter
from tenants.models import SharingRequest
from tenants.policy import SHARING_MODES

STATE_CHOICES = [
    ("pending", "Pending"),
    ("active", "Approved and active"),
    ("expired", "Approved, expired"),
    ("not_permitted", "Approved, mode no longer permitted by the trust class"),
    ("denied", "Denied"),
    ("revoked", "Revoked"),
]


class SharingRequestFilter(FilterSet):
    tenant = tenant_filter()
    cluster = cluster_filter()
    mode = django_filters.ChoiceFilter(choices=[(m, m) for m in SHARING_MODES])
    state = django_filters.ChoiceFilter(choices=STATE_CHOICES, method="filter_state", label="State")

    class Meta:
        model = SharingRequest
        fields = ["tenant", "cluster", "mode", "state", "node_pool"]

    def filter_state(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        # One rule with the model's state(): the class's expiry ceiling and permitted modes.
        now = timezone.now()
        requests = SharingRequest.objects
        if value == "active":
            return queryset.filter(pk__in=requests.active(now).values("pk"))
        if value == "expired":
            return queryset.filter(status=SharingRequest.Status.APPROVED).exclude(
                pk__in=requests.unexpired(now).values("pk")
            )
        if value == "not_permitted":
            unexpired = requests.unexpired(now).exclude(pk__in=requests.active(now).values("pk"))
            return queryset.filter(pk__in=unexpired.values("pk"))
        return queryset.filter(status=value)
