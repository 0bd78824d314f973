"""Posture pages: overview, tenant posture, findings. Thin: selectors read, templates show."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils.safestring import mark_safe

from gpuposture.base.roles import TRIAGE_FINDINGS, may
from inventory.presenter import hidden_scope_for, present_all
from inventory.selectors import cluster_detail_context
from posture import charts
from posture.acceptance import acceptance_window
from posture.catalogue import by_control, catalogue, check_exemptions
from posture.checklist import cluster_checklist
from posture.claims import shown_namespaces
from posture.currency import clusters_currency
from posture.models import Severity, TenantScore
from posture.observed import clusters_never_read, with_observed
from posture.overview import overview_body
from posture.rescore import rescore_expired_when_eager
from posture.rules import CHECKS
from posture.selectors import (
    NOT_SCORED_REASONS,
    checklist_facts,
    sharing_requests_current,
    tenant_posture,
    with_tenant_slugs,
)
from posture.tenant_findings import (
    ROWS_PER_GROUP,
    tenant_findings_page,
    top_contributions,
    with_subjects,
)
from telemetry.selectors import cluster_sampled
from tenants.models import Tenant

UNCLAIMED_SHOWN = 50  # namespaces listed on the unclassified tenant's page before "+N more"


def overview(request: HttpRequest) -> HttpResponse:
    rescore_expired_when_eager()
    body, has_charts = overview_body(request.user)
    # Our own template's output (autoescaped), kept in the cache as text. How current it is
    # is read on every request, outside the cache: time alone makes a cluster stale.
    return render(
        request,
        "posture/overview.html",
        {
            "body": mark_safe(body),  # noqa: S308
            "has_charts": has_charts,
            "currency": clusters_currency(request.user),
        },
    )


def tenant_detail(request: HttpRequest, slug: str) -> HttpResponse:
    rescore_expired_when_eager()
    tenants = with_observed(Tenant.objects.visible_to(request.user).select_related("trust_class"))
    tenant = get_object_or_404(tenants, slug=slug)
    posture = tenant_posture(tenant, with_findings=False)
    # The latest 200 runs, oldest first: the risk points over time.
    history = TenantScore.objects.filter(tenant=tenant).order_by("-computed_at", "-id")
    points = history.values_list("computed_at", "risk")[:200]
    trend = [(at.isoformat(), risk) for at, risk in list(points)[::-1]]
    # Grouped by check and bounded, whatever the cluster size (posture.tenant_findings).
    listing = tenant_findings_page(tenant, request.GET)
    scope = hidden_scope_for(request.user)
    with_tenant_slugs(present_all(scope, listing.rows), scope)
    top, rest = top_contributions(posture["contributions"])
    unclaimed, unclaimed_more = shown_namespaces(tenant.unclaimed_namespaces, UNCLAIMED_SHOWN)
    top = with_subjects(top, request.user, scope)
    return render(
        request,
        "posture/tenant_detail.html",
        {
            "tenant": tenant,
            "unclaimed": unclaimed,
            "unclaimed_more": unclaimed_more,
            "posture": posture,
            "not_scored_why": NOT_SCORED_REASONS.get(posture["not_scored_reason"] or "", ""),
            "top_risks": top,
            "other_risks": rest,
            "listing": listing,
            "severities": Severity.values,
            "checks": sorted(CHECKS),
            "rows_per_group": ROWS_PER_GROUP,
            "trend": charts.score_trend(trend) if len(trend) > 1 else None,
            "can_accept": may(request.user, TRIAGE_FINDINGS),
            "accept_window": acceptance_window(),
            "approvals": sharing_requests_current(tenant),
            "currency": clusters_currency(request.user, tenant=tenant),
            # A score of what was read, nothing of this tenant among it: which clusters weren't.
            "never_read": [] if posture["observed"] else clusters_never_read(request.user),
        },
    )


def check_list(request: HttpRequest) -> HttpResponse:
    return render(request, "posture/check_list.html", {"checks": catalogue(request.user)})


def check_detail(request: HttpRequest, check_id: str) -> HttpResponse:
    entry = next((c for c in catalogue(request.user) if c["id"] == check_id.upper()), None)
    if entry is None:
        raise Http404("No such check.")
    return render(
        request,
        "posture/check_detail.html",
        {"check": entry, "exemptions": check_exemptions(request.user, entry["id"])},
    )


def frameworks(request: HttpRequest) -> HttpResponse:
    return render(request, "posture/frameworks.html", {"controls": by_control(request.user)})


def cluster_detail(request: HttpRequest, name: str) -> HttpResponse:
    context = cluster_detail_context(request, name)
    facts = checklist_facts(context["cluster"], request.user)
    context["checklist"] = cluster_checklist(facts)
    context["currency"] = clusters_currency(request.user, cluster=context["cluster"])
    # No sample ever ingested: ATTR-001 has nothing to judge, which the page says outright.
    context["telemetry_ingested"] = cluster_sampled(cluster=context["cluster"])
    return render(request, "inventory/cluster_detail.html", context)
