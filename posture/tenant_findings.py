"""A tenant's findings grouped by check, bounded whatever the cluster size (issue 18, "Pages at
any size").

One cause per subject can still be thousands of findings for one tenant on a large shared
cluster (a stack problem on every node it uses). The page shows each check once (its explanation
and fix) with its subjects as a table, and never more than a fixed number of rows: a page of
check groups with the first subjects of each, or one check's subjects a page at a time. Every
figure comes from a fixed number of grouped queries, so the page costs the same at 10 findings
and at 100,000.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from urllib.parse import urlencode

from django.core.paginator import Page, Paginator
from django.db.models import (
    Case,
    Count,
    Exists,
    F,
    IntegerField,
    Min,
    OuterRef,
    Prefetch,
    QuerySet,
    When,
    Window,
)
from django.db.models import Value as V
from django.db.models.functions import RowNumber
from django.utils import timezone

from gpuposture.base.enums import Severity as SeverityCode
from gpuposture.base.finding_status import effective_status_expr, lapsed_q, status_q
from inventory.models import Cluster
from inventory.presenter import present_all
from posture.models import Finding, Severity
from posture.rules.registry import CHECKS, Check
from tenants.models import Tenant

GROUPS_PER_PAGE = 10  # check groups on one page of the grouped view
ROWS_PER_GROUP = 10  # subjects shown in a collapsed group; the rest are one click away
ROWS_PER_PAGE = 50  # subjects on one page of a single check's view (?check=)
TOP_RISKS = 10  # contributions listed under "Why this score"

SEVERITY_RANK = {s: i for i, s in enumerate((*SeverityCode.values(), "info"))}
LIVE = (Finding.Status.OPEN, Finding.Status.ACCEPTED)


@dataclass(frozen=True)
class Filters:
    """The page's filters, validated: an unknown value filters nothing rather than failing."""

    check: str = ""
    severity: str = ""
    cluster: str = ""

    @classmethod
    def from_query(cls, query: Mapping[str, str]) -> Filters:
        check = (query.get("check") or "").strip().upper()
        severity = (query.get("severity") or "").strip().lower()
        return cls(
            check=check if check in CHECKS else "",
            severity=severity if severity in Severity.values else "",
            cluster=(query.get("cluster") or "").strip()[:200],
        )

    def apply(self, queryset: QuerySet) -> QuerySet:
        if self.check:
            queryset = queryset.filter(check_id=self.check)
        if self.severity:
            queryset = queryset.filter(severity=self.severity)
        if self.cluster:
            queryset = queryset.filter(cluster__name=self.cluster)
        return queryset

    def query(self) -> str:
        """The query string of these filters, for links (pages, "all of a check") that keep
        them."""
        values = {"check": self.check, "severity": self.severity, "cluster": self.cluster}
        return urlencode({k: v for k, v in values.items() if v})


@dataclass
class Group:
    """One check's findings for the tenant: counted in full, the first rows listed."""

    check_id: str
    check: Check | None
    total: int
    open: int
    worst: str
    rows: list = field(default_factory=list)
    lapsed: int = 0  # open because their acceptance expired; the score has not seen it yet

    @property
    def more(self) -> int:
        return self.total - len(self.rows)


def severity_rank() -> Case:
    """Severity as a number to order by: critical 0, high 1, medium 2, low 3 (never by name)."""
    whens = [When(severity=s, then=V(rank)) for s, rank in SEVERITY_RANK.items()]
    return Case(*whens, default=V(len(SEVERITY_RANK)), output_field=IntegerField())


def _row_order(now: datetime) -> list:
    # Open before accepted ("open" sorts after "accepted"; a lapsed acceptance is open),
    # worst severity first, oldest id.
    return [effective_status_expr(now).desc(), severity_rank().asc(), F("id").asc()]


def live_findings(tenant: Tenant) -> QuerySet:
    return Finding.objects.affecting(tenant=tenant).filter(status__in=LIVE)


def tenant_slugs_prefetch() -> Prefetch:
    """The tenants a listed finding affects, slugs only: the rows show them by slug
    (posture.selectors.with_tenant_slugs), and a shared node's finding affects ~20 tenants,
    so a page of rows reads thousands of them."""
    return Prefetch("tenants", queryset=Tenant.objects.only("id", "slug"))


def _groups(findings: QuerySet, now: datetime) -> tuple[list[Group], list[str]]:
    """Every check with live findings for the tenant, worst first, and the clusters they are
    on (one grouped query by check and cluster: at most a row per registered check and
    cluster, so bounded by the catalogue and the clusters, not by the cluster's size)."""
    rows = (
        findings.order_by()
        .values("check_id", "cluster__name")
        .annotate(
            total=Count("id"),
            open=Count("id", filter=status_q(Finding.Status.OPEN, now)),
            lapsed=Count("id", filter=lapsed_q(now)),
            worst=Min(severity_rank()),
        )
    )
    names = {rank: s for s, rank in SEVERITY_RANK.items()}
    by_check: dict[str, Group] = {}
    clusters: set[str] = set()
    for r in rows:
        clusters.add(r["cluster__name"])
        group = by_check.get(r["check_id"])
        if group is None:
            by_check[r["check_id"]] = Group(
                r["check_id"],
                CHECKS.get(r["check_id"]),
                r["total"],
                r["open"],
                names.get(r["worst"], "info"),
                lapsed=r["lapsed"],
            )
            continue
        group.total += r["total"]
        group.open += r["open"]
        group.lapsed += r["lapsed"]
        worst = names.get(r["worst"], "info")
        if SEVERITY_RANK.get(worst, 9) < SEVERITY_RANK.get(group.worst, 9):
            group.worst = worst
    groups = sorted(
        by_check.values(),
        key=lambda g: (g.open == 0, SEVERITY_RANK.get(g.worst, 9), -g.open, g.check_id),
    )
    return groups, sorted(clusters)


def _first_rows(findings: QuerySet, check_ids: list[str], now: datetime) -> QuerySet:
    """The first ROWS_PER_GROUP findings of each check in `check_ids`: one query, numbered per
    check by a window so a check with 40,000 subjects costs the same as one with 4."""
    numbered = findings.filter(check_id__in=check_ids).annotate(
        row=Window(RowNumber(), partition_by=[F("check_id")], order_by=_row_order(now))
    )
    # Numbered by id alone, then read whole: numbering the full rows sorted every live
    # finding of the tenant with its evidence (2 s on PostgreSQL for 6,878 findings).
    first = numbered.filter(row__lte=ROWS_PER_GROUP).values("pk")
    return (
        Finding.objects.filter(pk__in=first)
        .select_related("cluster", "accepted_by")
        .prefetch_related(tenant_slugs_prefetch())
        .order_by("check_id", *_row_order(now))
    )


@dataclass
class TenantFindingsPage:
    filters: Filters
    groups: list[Group]  # the groups on this page, rows attached
    page: Page  # of groups (grouped view) or of one check's findings (single view)
    single: bool  # ?check= given: one check, its subjects paginated
    total: int  # live findings matching the filters
    clusters: list[str]  # for the cluster filter
    # Of `total`, those open because their acceptance expired since the last score: the
    # score still counts them as accepted until the next re-score (the page says so).
    lapsed: int = 0

    @property
    def rows(self) -> list:
        return [row for group in self.groups for row in group.rows]


def tenant_findings_page(tenant: Tenant, query: Mapping[str, str]) -> TenantFindingsPage:
    """The tenant's live findings for one page: groups by check, each bounded (see module)."""
    filters = Filters.from_query(query)
    now = timezone.now()
    base = live_findings(tenant)
    findings = filters.apply(base)
    groups, clusters = _groups(findings, now)
    if filters.query():  # filtered: the cluster filter still offers every cluster
        clusters = list(
            Cluster.objects.filter(Exists(base.filter(cluster=OuterRef("pk"))))
            .order_by("name")
            .values_list("name", flat=True)
        )
    total, lapsed = sum(g.total for g in groups), sum(g.lapsed for g in groups)
    if filters.check:
        ordered = findings.select_related("cluster", "accepted_by").prefetch_related(
            tenant_slugs_prefetch()
        )
        page = Paginator(ordered.order_by(*_row_order(now)), ROWS_PER_PAGE).get_page(
            query.get("page")
        )
        for group in groups:  # one group: the check filtered on
            group.rows = list(page.object_list)
        return TenantFindingsPage(filters, groups, page, True, total, clusters, lapsed)
    page = Paginator(groups, GROUPS_PER_PAGE).get_page(query.get("page"))
    shown = list(page.object_list)
    by_check: dict[str, list] = {g.check_id: [] for g in shown}
    if shown:
        for row in _first_rows(findings, list(by_check), now):
            by_check[row.check_id].append(row)
    for group in shown:
        group.rows = by_check[group.check_id]
    return TenantFindingsPage(filters, shown, page, False, total, clusters, lapsed)


def top_contributions(contributions: list[dict]) -> tuple[list[dict], dict | None]:
    """The TOP_RISKS largest contributions (they arrive largest first), and what the rest add
    up to, so "Why this score" stays short for a tenant with thousands of findings."""
    top, rest = contributions[:TOP_RISKS], contributions[TOP_RISKS:]
    if not rest:
        return top, None
    return top, {
        "count": len(rest),
        "points": sum(c.get("points", 0) for c in rest),
        "share": sum(c.get("share", 0) for c in rest),
    }


def with_subjects(top: list[dict], user, scope) -> list[dict]:
    """Each listed contribution with the finding it comes from (one query, at most TOP_RISKS
    rows), shown through the viewer's redaction: "Why this score" names what to change, not
    only the check (two STACK-001 rows on two nodes read alike otherwise)."""
    ids = [c["finding_id"] for c in top if isinstance(c.get("finding_id"), int)]
    rows = Finding.objects.visible_to(user).filter(id__in=ids).select_related("cluster")
    found = {f.id: f for f in present_all(scope, rows)}
    return [c | {"finding": found.get(c.get("finding_id"))} for c in top]
