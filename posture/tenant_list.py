"""The tenants page (/tenants/): every tenant the user may see, searchable, filtered by trust
class and sorted on the server by risk, score, open findings or name. A tenant viewer sees the
tenants they view and nothing else (Tenant.objects.visible_to, through tenants_ranked)."""

from __future__ import annotations

from dataclasses import dataclass

from django.core.paginator import Page, Paginator
from django.db.models import Count, F, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render
from django.utils import timezone

from gpuposture.base.finding_status import status_q
from posture.models import Finding, FindingTenant
from posture.ranking import SEVERITIES, tenant_rows
from posture.rescore import rescore_expired_when_eager
from posture.selectors import not_scored_words, tenants_ranked
from tenants.models import Tenant, TenantNamespace, TrustClass

PAGE_SIZE = 50
# What a JSON list of namespace names holds besides the names (no namespace has any of these).
JSON_SYNTAX = frozenset('[]",\\ ')
# Sort key -> ORDER BY. Unscored tenants come after the scored ones, whatever the sort by risk
# or score (their rows say "not scored" and why). Scores are stored rounded (0.1 past ~11,500
# points): equal scores fall back to risk points, the most exposed first; equal values to the
# slug, so pages never reshuffle.
SORTS = {
    "risk": (F("latest_risk").desc(nulls_last=True), "slug"),
    "score": (
        F("latest_score").asc(nulls_last=True),
        F("latest_risk").desc(nulls_last=True),
        "slug",
    ),
    "findings": (F("open_total").desc(), F("latest_risk").desc(nulls_last=True), "slug"),
    "name": ("name", "slug"),
}
SORT_LABELS = {
    "risk": "risk points",
    "score": "score (lowest first)",
    "findings": "open findings",
    "name": "name",
}


@dataclass(frozen=True)
class TenantQuery:
    """What the user asked for, read from the query string; unknown values fall back."""

    q: str = ""
    trust_class: str = ""
    sort: str = "risk"

    @classmethod
    def from_get(cls, params: QueryDict) -> TenantQuery:
        sort = params.get("sort", "risk")
        return cls(
            q=params.get("q", "").strip()[:120],
            trust_class=params.get("class", "").strip()[:63],
            sort=sort if sort in SORTS else "risk",
        )


def tenants_listed(user, query: TenantQuery) -> QuerySet[Tenant]:
    """The tenants the user may see, counted and scored as on the overview, narrowed and
    ordered as asked."""
    # Counted per tenant in subqueries, so the page sorts and paginates in SQL. Open as
    # shown: an acceptance past its expiry counts.
    is_open = status_q(Finding.Status.OPEN, timezone.now(), prefix="finding__")
    counts = {
        f"open_{sev}": Coalesce(
            Subquery(
                FindingTenant.objects.filter(
                    is_open,
                    tenant=OuterRef("pk"),
                    finding__severity=sev,
                )
                .values("tenant_id")
                .annotate(n=Count("pk"))
                .values("n")[:1]
            ),
            0,
        )
        for sev in SEVERITIES
    }
    c, h, m, low = (F(f"open_{s}") for s in SEVERITIES)
    tenants = tenants_ranked(user).annotate(**counts).annotate(open_total=c + h + m + low)
    if query.q:
        # By id, not a join: a join on namespaces would multiply the finding counts.
        owning = TenantNamespace.objects.filter(name__icontains=query.q).values("tenant_id")
        found = Q(name__icontains=query.q) | Q(slug__icontains=query.q) | Q(pk__in=owning)
        if not JSON_SYNTAX.intersection(query.q):
            # The unclassified row's namespaces (Tenant.unclaimed_namespaces, a JSON list):
            # matched in its text, so never by a character of the JSON around the names.
            found |= Q(is_system=True, unclaimed_namespaces__icontains=query.q)
        tenants = tenants.filter(found)
    if query.trust_class:
        tenants = tenants.filter(trust_class__slug=query.trust_class)
    return tenants.order_by(*SORTS[query.sort])


def tenant_list(request: HttpRequest) -> HttpResponse:
    rescore_expired_when_eager()
    query = TenantQuery.from_get(request.GET)
    page: Page = Paginator(tenants_listed(request.user, query), PAGE_SIZE).get_page(
        request.GET.get("page")
    )
    rows = tenant_rows(page.object_list)
    params = request.GET.copy()
    params.pop("page", None)
    return render(
        request,
        "posture/tenant_list.html",
        {
            "page": page,
            "rows": rows,
            "not_scored_why": not_scored_words(rows),
            "query": query,
            "querystring": params.urlencode(),
            "sorts": SORT_LABELS,
            "classes": TrustClass.objects.order_by("rank", "slug").values_list("slug", "name"),
            "filtered": bool(query.q or query.trust_class),
        },
    )
