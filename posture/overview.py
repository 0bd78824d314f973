"""The overview page's body: what it shows, built once per posture version for the readers
of every tenant (posture/read_cache.py)."""

from __future__ import annotations

from typing import Any

from django.template.loader import render_to_string

from gpuposture.base.roles import reads_all_posture
from inventory.presenter import hidden_scope_for, present_all
from inventory.selectors import clusters_with_last_sync
from posture import charts, scoring
from posture.action_store import own_risk_removed, own_shares
from posture.ranking import RankedRow, ranked, tenant_rows
from posture.read_cache import shared_read
from posture.selectors import (
    not_scored_words,
    risk_series,
    tenants_overview,
    top_actions,
    with_tenant_slugs,
)

TREND_TENANTS = 8  # lines on the trend: the most risk; every tenant's own is on its page


def overview_body(user) -> tuple[str, bool]:
    """The page's main HTML (no forms, no scripts) and whether it holds charts."""
    return shared_read(user, ("overview",), lambda: _render(user))


def overview_rows(user) -> list[RankedRow]:
    """The ranked list: every row that holds risk, most first (other kinds of row join here)."""
    return ranked(tenant_rows(tenants_overview(user)))


def overview_context(user) -> dict[str, Any]:
    rows = overview_rows(user)
    top = [r.tenant_slug for r in rows if r.tenant_slug and r.risk is not None][:TREND_TENANTS]
    series = {
        slug: points
        for slug, points in risk_series(user, tenant_slugs=top).items()
        if len(points) > 1
    }
    # A title may name another tenant (a co-tenancy pair): hidden as on the findings page.
    scope = hidden_scope_for(user)
    actions = with_tenant_slugs(present_all(scope, top_actions(user)), scope)
    for action in actions:  # a tenant viewer's: the risk their own tenants lose (as the API)
        action.risk_removed = own_risk_removed(action)
        action.share_of_risk, action.share_of_critical = own_shares(action)
    # Unscored tenants' zeros are not "no findings": nothing was judged (their rows say so).
    scored = [r for r in rows if r.tenant_slug and r.risk is not None]
    bars = [{"tenant": r.key, **r.open_counts} for r in scored]
    return {
        "rows": rows,
        "not_scored_why": not_scored_words(rows),
        "k": scoring.K,
        "chart": charts.findings_by_severity(bars) if bars else None,
        "trend": charts.risk_over_time(series, order=top) if series else None,
        "trend_limited": len(top) == TREND_TENANTS,
        "actions": actions,
        "clusters": clusters_with_last_sync(user),
        # Rendered outside a request (cached): the empty states' wording per reader.
        "sees_everything": reads_all_posture(user),
    }


def _render(user) -> tuple[str, bool]:
    context = overview_context(user)
    html = render_to_string("posture/_overview_body.html", context)
    return html, bool(context["chart"] or context["trend"])
