"""Finding filters, shared by the findings page and the API (STYLE rule 8). Tenants and
clusters are named by slug or name, not only id (DESIGN §8); a value naming nothing the user
may see is refused (gpuposture.base.filters), never an empty list."""

from __future__ import annotations

from typing import Any

import django_filters
from django.db.models import QuerySet
from django.utils import timezone

from gpuposture.base.filters import FilterSet, KnownValueFilter, NamedFilter
from gpuposture.base.finding_status import status_q
from inventory.filters import cluster_filter
from inventory.presenter import hidden_scope_for
from posture.finding_search import finding_search
from posture.models import Action, Finding, Severity
from posture.rules import CHECKS
from tenants.filters import tenant_filter


def check_filter(**kwargs: Any) -> KnownValueFilter:
    """A check id of the catalogue, in any case (`share-001`)."""
    kwargs.setdefault("label", "Check id")
    return KnownValueFilter(
        known=lambda user: sorted(CHECKS),
        noun="check",
        accepts="a check id such as SHARE-001",
        listing="GET /api/v1/checks/ (or docs/checks.md)",
        normalise=lambda value: value.strip().upper(),
        **kwargs,
    )


class FindingFilter(FilterSet):
    # Words in the title, the subject or the check id (posture.finding_search: a tenant
    # viewer's search matches only what they are shown, never a hidden name).
    q = django_filters.CharFilter(method="filter_search", label="Search")
    # "Affects this tenant": a finding affects every tenant in its relation (DESIGN §8).
    tenant = tenant_filter(method="filter_tenant", label="Affects tenant (slug, name or id)")
    cluster = cluster_filter()
    check = check_filter(field_name="check_id")
    severity = django_filters.ChoiceFilter(choices=Severity.choices)
    # The effective status (gpuposture.base.finding_status): a lapsed acceptance is open.
    status = django_filters.ChoiceFilter(choices=Finding.Status.choices, method="filter_status")
    # Keys are stable across scores; one no longer computed (its findings resolved) is gone.
    action = NamedFilter(
        path="",
        model=Action,
        names=("key",),
        ids=False,
        max_listed=0,  # keys mean nothing quoted: the list says what each action is
        noun="action",
        listing="GET /api/v1/actions/",
        method="filter_action",
        label="Closed by action (key)",
    )

    class Meta:
        model = Finding
        fields = ["q", "tenant", "cluster", "check", "severity", "status", "action"]

    def filter_search(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        user = getattr(self.request, "user", None)
        return finding_search(queryset, value, hidden_scope_for(user) if user else None)

    def filter_status(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        return queryset.filter(status_q(value, timezone.now()))

    def filter_action(self, queryset: QuerySet, name: str, value: list[int]) -> QuerySet:
        """The findings the fix-first action closes (one query for its finding ids)."""
        lists = Action.objects.filter(pk__in=value).values_list("finding_ids", flat=True)
        return queryset.filter(pk__in=[pk for ids in lists for pk in ids or []])

    def filter_tenant(self, queryset: QuerySet, name: str, value: list[int]) -> QuerySet:
        """Findings that affect the tenant. The tenant was resolved among those the user may
        see: a tenant viewer naming another is refused as if it did not exist."""
        return queryset.affecting(tenant__in=value)
