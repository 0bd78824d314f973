"""Reset attestations' API filters: the cluster by name or id, the tenant on either side of
the reset (DESIGN §8: filters name objects as people do)."""

from __future__ import annotations

import django_filters
from django.db.models import QuerySet

from gpuposture.base.filters import cluster_filter, named
from telemetry.models import ResetAttestation


class ResetAttestationFilter(django_filters.FilterSet):
    cluster = cluster_filter()
    # A reset stands between two tenants; it concerns both.
    tenant = django_filters.CharFilter(
        method="filter_tenant", label="Previous or next tenant (slug, name or id)"
    )

    class Meta:
        model = ResetAttestation
        fields = ["cluster", "tenant", "node", "gpu_uuid", "method"]

    def filter_tenant(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        names = ("slug", "name")
        return queryset.filter(
            named("previous_tenant", value, names) | named("next_tenant", value, names)
        )
