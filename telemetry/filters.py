"""Reset attestations' API filters: the cluster by name or id, the tenant on either side of
the reset (DESIGN §8: filters name objects as people do). `node` and `gpu_uuid` are what was
recorded, free text: an attestation outlives the node it names."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from gpuposture.base.filters import FilterSet
from inventory.filters import cluster_filter
from telemetry.models import ResetAttestation
from tenants.filters import tenant_filter


class ResetAttestationFilter(FilterSet):
    cluster = cluster_filter()
    # A reset stands between two tenants; it concerns both.
    tenant = tenant_filter(
        method="filter_tenant", label="Previous or next tenant (slug, name or id)"
    )

    class Meta:
        model = ResetAttestation
        fields = ["cluster", "tenant", "node", "gpu_uuid", "method"]

    def filter_tenant(self, queryset: QuerySet, name: str, value: list[int]) -> QuerySet:
        return queryset.filter(Q(previous_tenant__in=value) | Q(next_tenant__in=value))
