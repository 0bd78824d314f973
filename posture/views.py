"""Posture pages: overview, tenant posture, findings. Thin: selectors read, templates show."""

from __future__ import annotations

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from inventory.selectors import clusters_with_last_sync
from posture import charts
from posture.filters import FindingFilter
from posture.models import Finding, TenantScore
from posture.redaction import redact, redact_text
from posture.rules import CHECKS
from posture.selectors import hidden_scope_for, tenant_posture, tenants_overview
from tenants.models import Tenant


def overview(request: HttpRequest) -> HttpResponse:
    tenants = list(tenants_overview(request.user))
    rows = [
        {"tenant": t.slug, **{s: getattr(t, f"open_{s}") for s in charts.SEVERITY_COLOURS}}
        for t in tenants
    ]
    return render(
        request,
        "posture/overview.html",
        {
            "tenants": tenants,
            "chart": charts.findings_by_severity(rows) if rows else None,
            "clusters": clusters_with_last_sync(request.user),
        },
    )


def tenant_detail(request: HttpRequest, slug: str) -> HttpResponse:
    tenant = get_object_or_404(
        Tenant.objects.visible_to(request.user).select_related("trust_class"), slug=slug
    )
    posture = tenant_posture(tenant)
    history = TenantScore.objects.filter(tenant=tenant).order_by("computed_at")[:200]
    trend = [(s.computed_at.isoformat(), s.score) for s in history]
    scope = hidden_scope_for(request.user)
    for finding in posture["findings"]:
        finding.evidence = redact(finding.evidence, scope)
        finding.title = redact_text(finding.title, scope)
    findings = [(f, CHECKS.get(f.check_id)) for f in posture["findings"]]
    return render(
        request,
        "posture/tenant_detail.html",
        {
            "tenant": tenant,
            "posture": posture,
            "findings": findings,
            "trend": charts.score_trend(trend) if len(trend) > 1 else None,
        },
    )


def finding_list(request: HttpRequest) -> HttpResponse:
    queryset = Finding.objects.visible_to(request.user).select_related("tenant", "cluster")
    filterset = FindingFilter(request.GET or {"status": "open"}, queryset=queryset)
    page = Paginator(filterset.qs.order_by("status", "severity", "check_id", "id"), 50).get_page(
        request.GET.get("page")
    )
    scope = hidden_scope_for(request.user)
    for finding in page.object_list:
        finding.title = redact_text(finding.title, scope)
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "posture/finding_list.html",
        {"filter": filterset, "page": page, "query": query.urlencode(), "checks": CHECKS},
    )
