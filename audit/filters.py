"""The audit log's filters, shared by the page and the API (STYLE rule 8). Each is free text
matched against what was recorded: an event outlives the user or object it names, so a value
naming nothing is an honest empty list, not an error."""

from __future__ import annotations

import django_filters
from django import forms

from audit.models import AuditEvent
from gpuposture.base.filters import FilterSet


class AuditEventFilter(FilterSet):
    actor = django_filters.CharFilter(field_name="actor_name", label="Actor (username)")
    action = django_filters.CharFilter(field_name="action", label="Action")
    object_type = django_filters.CharFilter(
        field_name="object_type", label="Object type (e.g. tenants.tenant)"
    )
    object_id = django_filters.CharFilter(field_name="object_id", label="Object id")
    since = django_filters.IsoDateTimeFilter(
        field_name="time",
        lookup_expr="gte",
        label="Since",
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}),
    )
    until = django_filters.IsoDateTimeFilter(
        field_name="time",
        lookup_expr="lte",
        label="Until",
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}),
    )
    request_id = django_filters.CharFilter(field_name="request_id", label="Request id")

    class Meta:
        model = AuditEvent
        fields = ["actor", "action", "object_type", "object_id", "since", "until", "request_id"]
