"""The findings list page: filters by name from pick-lists, search, server-side sort on every
column, and the export links of exactly what is shown. The filters are the API's
(posture.filters.FindingFilter), so the page, the API list and the export select the same
findings."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import F, OuterRef, QuerySet, Subquery
from django.http import QueryDict
from django.utils import timezone

from gpuposture.base.finding_status import effective_status_expr
from gpuposture.base.querysets import sees_every_row
from inventory.models import Cluster
from inventory.presenter import hidden_scope_for, present_all
from posture.filters import FindingFilter
from posture.models import Finding, FindingTenant, Severity
from posture.rules import CHECKS
from posture.selectors import with_tenant_slugs
from posture.tenant_findings import severity_rank
from tenants.models import Tenant

PAGE_SIZE = 50
DEFAULT_QUERY = "status=open"  # a first visit lists what needs work
# Column key -> its heading; every column sorts (`?sort=key`, `?sort=-key` for descending).
COLUMNS = {
    "severity": "Severity",
    "check": "Check",
    "title": "Title",
    "tenants": "Tenants affected",
    "cluster": "Cluster",
    "subject": "Subject",
    "status": "Status",
    "last_seen": "Last seen",
}
DEFAULT_SORT = "severity"
# Parameters that are not filters: the export and the pager leave them out.
NOT_FILTERS = ("page", "sort")


@dataclass(frozen=True)
class Column:
    key: str
    label: str
    href: str  # the query that sorts by it (the other way when it is the current sort)
    aria_sort: str  # "ascending", "descending" or "" (not sorted by it)


@dataclass
class FindingListPage:
    filter: FindingFilter
    page: Page
    columns: list[Column]
    query: str  # the filters (and sort) without the page, for the pager
    export_query: str  # the filters alone: what the export selects
    options: dict[str, Any]  # pick-lists
    values: dict[str, str]  # the filters as given, to keep the form filled in


def _first_tenant(user) -> Subquery:
    """The first slug (alphabetically) of the tenants a finding affects that `user` may see:
    a tenant viewer's order never depends on another tenant's name."""
    links = FindingTenant.objects.filter(finding=OuterRef("pk"))
    if not sees_every_row(user, Tenant):
        links = links.filter(tenant__in=Tenant.objects.visible_to(user))
    return Subquery(links.order_by("tenant__slug").values("tenant__slug")[:1])


def _order(key: str, user) -> list:
    """The ORDER BY of a column; ties go by severity, then id, so pages never overlap."""
    return {
        "severity": [severity_rank()],
        "check": [F("check_id")],
        "title": [F("title")],
        "tenants": [_first_tenant(user)],
        "cluster": [F("cluster__name")],
        "subject": [F("subject_kind"), F("subject_namespace"), F("subject_name")],
        # As shown: a lapsed acceptance sorts with the open findings.
        "status": [effective_status_expr(timezone.now())],
        "last_seen": [F("last_seen")],
    }[key]  # type: ignore[return-value]  # mypy joins the entries' list types to object


def parse_sort(value: str | None) -> tuple[str, bool]:
    """(column, descending) from `?sort=`; anything unknown sorts by severity, worst first."""
    value = (value or "").strip()
    descending = value.startswith("-")
    key = value.lstrip("-")
    return (key, descending) if key in COLUMNS else (DEFAULT_SORT, False)


def sorted_findings(queryset: QuerySet, key: str, descending: bool, user) -> QuerySet:
    terms = [
        t.desc(nulls_last=True) if descending else t.asc(nulls_last=True) for t in _order(key, user)
    ]
    return queryset.order_by(*terms, severity_rank().asc(), "id")


def _columns(query: QueryDict, key: str, descending: bool) -> list[Column]:
    columns = []
    for name, heading in COLUMNS.items():
        current = name == key
        params = query.copy()
        params.pop("page", None)
        params["sort"] = f"-{name}" if current and not descending else name
        state = ("descending" if descending else "ascending") if current else ""
        columns.append(Column(name, heading, params.urlencode(), state))
    return columns


def pick_lists(user) -> dict[str, Any]:
    """The filters' options, by name, limited to what `user` may see (two queries)."""
    tenants = Tenant.objects.visible_to(user).order_by("name").values_list("slug", "name")
    clusters = Cluster.objects.visible_to(user).order_by("name").values_list("name", flat=True)
    return {
        "tenants": list(tenants),
        "clusters": list(clusters),
        "checks": [(check_id, CHECKS[check_id].title) for check_id in sorted(CHECKS)],
        "severities": list(Severity.values),  # critical first, as declared
        "statuses": list(Finding.Status.values),
    }


def finding_list_page(user, query: QueryDict) -> FindingListPage:
    """The page of findings `query` asks for, as `user` may see them."""
    data = query if query else QueryDict(DEFAULT_QUERY)
    queryset = (
        Finding.objects.visible_to(user)
        .select_related("cluster", "accepted_by", "owner")
        .prefetch_related("tenants")
    )
    filterset = FindingFilter(data, queryset=queryset, request=_Request(user))
    key, descending = parse_sort(data.get("sort"))
    ordered = sorted_findings(filterset.qs, key, descending, user)
    page = Paginator(ordered, PAGE_SIZE).get_page(data.get("page"))
    scope = hidden_scope_for(user)
    with_tenant_slugs(present_all(scope, page.object_list), scope)
    without_page = data.copy()
    without_page.pop("page", None)
    filters_only = without_page.copy()
    filters_only.pop("sort", None)
    values = {name: data.get(name, "") for name in FindingFilter.base_filters}
    return FindingListPage(
        filter=filterset,
        page=page,
        columns=_columns(data, key, descending),
        query=without_page.urlencode(),
        export_query=_nonempty(filters_only),
        options=pick_lists(user),
        values=values,
    )


def _nonempty(query: Mapping[str, str]) -> str:
    kept = QueryDict(mutable=True)
    for name, value in query.items():
        if value:
            kept[name] = value
    return kept.urlencode()


class _Request:
    """What FindingFilter reads of a request: the user (the page may filter a query that is
    not the request's own, e.g. the list re-shown after a refused bulk acceptance)."""

    def __init__(self, user) -> None:
        self.user = user
