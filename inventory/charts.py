"""Plotly figures for inventory pages, as JSON for static/js/charts.js to draw."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go


def patch_heatmap(
    pools: list[str], components: list[str], below: list[list[int]]
) -> dict[str, Any]:
    """Nodes below the bulletin baseline per node pool (rows) and component (columns)."""
    figure = go.Figure(
        go.Heatmap(
            z=below,
            x=components,
            y=pools,
            colorscale="Oranges",
            zmin=0,
            text=below,
            texttemplate="%{text}",
            hovertemplate="%{y} / %{x}: %{z} node(s) below baseline<extra></extra>",
            colorbar={"title": "nodes"},
        )
    )
    figure.update_layout(
        height=80 + 40 * max(1, len(pools)), margin={"l": 140, "r": 10, "t": 10, "b": 40}
    )
    return figure.to_plotly_json()
