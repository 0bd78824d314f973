"""Filters shared by the sharing-request pages and API (STYLE rule 8)."""

from __future__ import annotations

import django_filters
from django import forms
from django.db.models import QuerySet
from django.utils import timezone

from gpuposture.base.filters import FilterSet
from gpuposture.base.labels import words
from inventory.filters import cluster_filter
from tenants.filters import tenant_filter
from tenants.models import SharingRequest
from tenants.policy import REQUEST_SCOPES, SHARING_MODES

STATE_CHOICES = [
    ("pending", "Pending"),
    ("active", "Approved and active"),
    ("expired", "Approved, expired"),
    ("denied", "Denied"),
    ("revoked", "Revoked"),
]


class SharingRequestFilter(FilterSet):
    tenant = tenant_filter()
    cluster = cluster_filter()
    # The page's choices read as words; the value (the page's and the API's) stays the code.
    mode = django_filters.ChoiceFilter(choices=[(m, words(m)) for m in SHARING_MODES], label="Mode")
    # DESIGN §2's name for the same field, as the API's body takes it; hidden on the page, which
    # has the `mode` list. Both given: both apply.
    sharing_mode = django_filters.ChoiceFilter(
        field_name="mode",
        choices=[(m, m) for m in SHARING_MODES],
        widget=forms.HiddenInput,
        label="Sharing mode (the same as mode)",
    )
    state = django_filters.ChoiceFilter(choices=STATE_CHOICES, method="filter_state", label="State")
    scope = django_filters.ChoiceFilter(
        choices=[(s, words(s)) for s in REQUEST_SCOPES], method="filter_scope", label="Scope"
    )

    class Meta:
        model = SharingRequest
        fields = ["tenant", "cluster", "mode", "sharing_mode", "state", "scope", "node_pool"]

    def filter_scope(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        # Derived from the tenant's current class, as the serializer's `scope` field is.
        return queryset.in_scope(value)

    def filter_state(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        # One rule with the model's state(): its own expiry and the class's ceiling.
        now = timezone.now()
        requests = SharingRequest.objects
        if value == "active":
            return queryset.filter(pk__in=requests.active(now).values("pk"))
        if value == "expired":
            return queryset.filter(status=SharingRequest.Status.APPROVED).exclude(
                pk__in=requests.unexpired(now).values("pk")
            )
        return queryset.filter(status=value)
