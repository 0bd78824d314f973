"""The overview page's body: what it shows, built once per posture version for the readers
of every tenant (posture/read_cache.py)."""

from __future__ import annotations

from typing import Any

from django.template.loader import render_to_string

from inventory.presenter import hidden_scope_for, present_all
from inventory.selectors import clusters_with_last_sync
from posture import charts
from posture.read_cache import shared_read
from posture.selectors import score_series, tenants_overview, with_tenant_slugs, worst_findings

TREND_TENANTS = 8  # lines on the trend: the lowest scores; every tenant's own is on its page


def overview_body(user) -> tuple[str, bool]:  # type: ignore[no-untyped-def]
    """The page's main HTML (no forms, no scripts) and whether it holds charts."""
    return shared_read(user, ("overview",), lambda: _render(user))


def overview_context(user) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    tenants = list(tenants_overview(user))
    lowest = [t.pk for t in tenants if t.latest][:TREND_TENANTS]
    series = {
        slug: points
        for slug, points in score_series(user, tenant_ids=lowest).items()
        if len(points) > 1
    }
    # A title may name another tenant's pods: as on the findings page.
    scope = hidden_scope_for(user)
    worst = with_tenant_slugs(present_all(scope, worst_findings(user)), scope)
    rows = [
        {"tenant": t.slug, **{s: getattr(t, f"open_{s}") for s in charts.SEVERITY_COLOURS}}
        for t in tenants
    ]
    return {
        "tenants": tenants,
        "chart": charts.findings_by_severity(rows) if rows else None,
        "trend": charts.scores_over_time(series) if series else None,
        "trend_limited": len(lowest) == TREND_TENANTS,
        "worst": worst,
        "clusters": clusters_with_last_sync(user),
    }


def _render(user) -> tuple[str, bool]:  # type: ignore[no-untyped-def]
    context = overview_context(user)
    html = render_to_string("posture/_overview_body.html", context)
    return html, bool(context["chart"] or context["trend"])
