"""Finding filters, shared by the findings page and the API (STYLE rule 8). Tenants and
clusters are named by slug or name, not only id (DESIGN §8)."""

from __future__ import annotations

import django_filters

from posture.models import Finding, Severity


class FindingFilter(django_filters.FilterSet):
    tenant = django_filters.CharFilter(field_name="tenant__slug", label="Tenant slug")
    cluster = django_filters.CharFilter(field_name="cluster__name", label="Cluster name")
    check = django_filters.CharFilter(field_name="check_id", lookup_expr="iexact", label="Check id")
    severity = django_filters.ChoiceFilter(choices=Severity.choices)
    status = django_filters.ChoiceFilter(choices=Finding.Status.choices)

    class Meta:
        model = Finding
        fields = ["tenant", "cluster", "check", "severity", "status"]
