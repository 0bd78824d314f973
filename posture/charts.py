"""Plotly figures for the posture pages, as JSON for static/js/charts.js to draw (no inline
scripts, no CDN: plotly.js is served from our static files)."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

# Colour-blind-safe palette (Okabe-Ito); severities are also labelled, never colour alone.
SEVERITY_COLOURS = {
    "critical": "#D55E00",
    "high": "#E69F00",
    "medium": "#0072B2",
    "low": "#999999",
}


def findings_by_severity(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Stacked bars: open findings per tenant, one trace per severity.
    rows: [{"tenant": slug, "critical": n, "high": n, "medium": n, "low": n}, ...]"""
    tenants = [row["tenant"] for row in rows]
    figure = go.Figure()
    for severity, colour in SEVERITY_COLOURS.items():
        figure.add_trace(
            go.Bar(
                name=severity,
                x=tenants,
                y=[row[severity] for row in rows],
                marker={"color": colour},
                hovertemplate="%{x}: %{y} " + severity + "<extra></extra>",
            )
        )
    figure.update_layout(
        barmode="stack",
        height=320,
        margin={"l": 40, "r": 10, "t": 30, "b": 60},
        legend={"orientation": "h", "y": 1.15},
        yaxis={"title": "open findings"},
        title=None,
    )
    return figure.to_plotly_json()


def score_trend(points: list[tuple[str, float]]) -> dict[str, Any]:
    """A tenant's risk points over its stored runs."""
    figure = go.Figure(
        go.Scatter(
            x=[p[0] for p in points],
            y=[p[1] for p in points],
            mode="lines+markers",
            line={"color": "#D55E00"},
            hovertemplate="%{x}: %{y} risk points<extra></extra>",
        )
    )
    figure.update_layout(
        height=220,
        margin={"l": 50, "r": 10, "t": 10, "b": 40},
        yaxis={"rangemode": "tozero", "title": "risk points"},
    )
    return figure.to_plotly_json()


TREND_COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000")


def risk_over_time(
    series: dict[str, list[tuple[str, float]]], order: list[str] | None = None
) -> dict[str, Any]:
    """Risk points over the stored runs, one line per tenant of `series` (the overview passes
    the few with most risk, in `order`: 200 lines read as noise). Risk has no floor, so lines
    of different tenants do not lie on each other. Slugs are ours: safe as text; hover shows
    them as data, not markup."""
    figure = go.Figure()
    slugs = [s for s in (order or sorted(series)) if s in series]
    for index, slug in enumerate(slugs):
        points = series[slug]
        figure.add_trace(
            go.Scatter(
                name=slug,
                x=[p[0] for p in points],
                y=[p[1] for p in points],
                mode="lines+markers",
                line={"color": TREND_COLOURS[index % len(TREND_COLOURS)]},
                marker={"symbol": index % 12},
                customdata=[slug] * len(points),
                hovertemplate="%{customdata}: %{y} risk points<extra></extra>",
            )
        )
    figure.update_layout(
        height=280,
        margin={"l": 50, "r": 10, "t": 10, "b": 40},
        yaxis={"rangemode": "tozero", "title": "risk points"},
        legend={"orientation": "h", "y": 1.15},
    )
    return figure.to_plotly_json()
