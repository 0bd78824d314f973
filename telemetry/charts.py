"""Plotly figures for the utilisation page, as JSON for static/js/charts.js to draw."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go


def tenant_hours_area(days: list[dict]) -> dict[str, Any]:
    """GPU-hours (whole GPUs plus MIG-slice-hours) per tenant per day: a stacked bar per day
    (a day is a total, not a point on a line; two days drawn as an area read as a trend
    through hours). Names are passed as data, never as markup: plotly escapes them in hover
    text."""
    dates = sorted({row["day"] for row in days})
    tenants = sorted({row["tenant_name"] for row in days})
    hours = {
        (row["tenant_name"], row["day"]): row["gpu_hours"] + row["mig_slice_hours"] for row in days
    }
    figure = go.Figure(
        [
            go.Bar(
                x=[d.isoformat() for d in dates],
                y=[round(hours.get((tenant, d), 0.0), 2) for d in dates],
                name=tenant,
                hovertemplate="%{x}: %{y} GPU-hours<extra>%{fullData.name}</extra>",
            )
            for tenant in tenants
        ]
    )
    figure.update_layout(
        height=320,
        margin={"l": 50, "r": 10, "t": 10, "b": 40},
        barmode="stack",
        xaxis={"type": "date", "tickformat": "%b %d", "dtick": 86_400_000},
        yaxis={"title": "GPU-hours (whole + MIG slices)"},
        legend={"orientation": "h"},
    )
    return figure.to_plotly_json()
