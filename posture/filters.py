"""Finding filters, shared by the findings page and the API (STYLE rule 8). Tenants and
clusters are named by slug or name, not only id (DESIGN §8)."""

from __future__ import annotations

import django_filters
from django.db.models import QuerySet

from gpuposture.base.filters import cluster_filter, named
from inventory.presenter import hidden_scope_for
from posture.finding_search import finding_search
from posture.models import Action, Finding, Severity
from tenants.models import Tenant


class FindingFilter(django_filters.FilterSet):
    # Words in the title, the subject or the check id (posture.finding_search: a tenant
    # viewer's search matches only what they are shown, never a hidden name).
    q = django_filters.CharFilter(method="filter_search", label="Search")
    # "Affects this tenant": a finding affects every tenant in its relation (DESIGN §8).
    tenant = django_filters.CharFilter(
        method="filter_tenant", label="Affects tenant (slug, name or id)"
    )
    cluster = cluster_filter()
    check = django_filters.CharFilter(field_name="check_id", lookup_expr="iexact", label="Check id")
    severity = django_filters.ChoiceFilter(choices=Severity.choices)
    status = django_filters.ChoiceFilter(choices=Finding.Status.choices)
    action = django_filters.CharFilter(method="filter_action", label="Closed by action (key)")

    class Meta:
        model = Finding
        fields = ["q", "tenant", "cluster", "check", "severity", "status", "action"]

    def filter_search(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        user = getattr(self.request, "user", None)
        return finding_search(queryset, value, hidden_scope_for(user) if user else None)

    def filter_action(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        """The findings one fix-first action closes (one query for its finding ids); an
        unknown key, or one from before the last score, selects nothing."""
        ids = Action.objects.filter(key=value).values_list("finding_ids", flat=True).first()
        return queryset.filter(pk__in=ids or [])

    def filter_tenant(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        """Findings that affect the tenant, if the user may see that tenant: a tenant viewer
        asking for another tenant gets nothing, not the findings they share with it."""
        if not value:
            return queryset
        tenants = Tenant.objects.filter(named("", value, ("slug", "name")))
        user = getattr(self.request, "user", None)  # the CLI filters with no request
        if user is not None:
            tenants = tenants.visible_to(user)
        return queryset.affecting(tenant__in=tenants)
