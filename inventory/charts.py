"""Plotly figures for inventory pages, as JSON for static/js/charts.js to draw."""

from __future__ import annotations

import math
from typing import Any

import plotly.graph_objects as go


def patch_heatmap(
    pools: list[str], components: list[str], below: list[list[int]]
) -> dict[str, Any]:
    """Nodes below the bulletin baseline per node pool (rows) and component (columns)."""
    top = max((n for row in below for n in row), default=0)
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
            zmax=max(top, 1),
            # Node counts are whole: ticks on integers only (plotly would put 0.5, 1.5 by 2).
            colorbar={"title": "nodes", "tick0": 0, "dtick": max(1, math.ceil(top / 5))},
        )
    )
    figure.update_layout(
        height=80 + 40 * max(1, len(pools)), margin={"l": 140, "r": 10, "t": 10, "b": 40}
    )
    return figure.to_plotly_json()
