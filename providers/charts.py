"""Plotly figures for the provider comparison page, as JSON for static/js/charts.js to draw.

Provider names and category titles are user data, and plotly draws names, category labels and
hover text as HTML-like markup: they are escaped here with html.escape (plotly turns the
entities back into characters when it draws them), and never put into a hovertemplate, whose
%{...} syntax would read them too.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

from providers.scoring import CategoryComparison, Comparison

# Colour-blind-safe palette (Okabe-Ito), yellow last for its low contrast on white; providers
# also differ by marker symbol and are named in the legend, never told apart by colour alone.
PROVIDER_COLOURS = (
    "#0072B2",
    "#D55E00",
    "#009E73",
    "#CC79A7",
    "#E69F00",
    "#56B4E9",
    "#000000",
    "#F0E442",
)
PROVIDER_SYMBOLS = ("circle", "square", "diamond", "triangle-up", "x", "star", "cross", "pentagon")
NOT_SCORED = "not scored"


def comparison_radar(comparison: Comparison) -> dict[str, Any]:
    """One closed shape per provider: category scores 0..100 around the circle. A category a
    provider has no score in is drawn at 0 and its hover says "not scored"."""
    labels = category_labels(comparison.categories)
    figure = go.Figure()
    for index, provider in enumerate(comparison.providers):
        colour = _colour(index)
        figure.add_trace(
            go.Scatterpolar(
                name=_safe(provider),
                r=_values(comparison.categories, provider),
                theta=labels,
                text=_hover(comparison.categories, provider),
                mode="lines+markers",
                fill="toself",
                fillcolor=_translucent(colour),
                line={"color": colour},
                marker={"symbol": _symbol(index), "size": 7},
                hovertemplate="%{theta}: %{text}<extra>%{fullData.name}</extra>",
            )
        )
    figure.update_layout(
        height=420,
        margin={"l": 60, "r": 60, "t": 30, "b": 30},
        legend={"orientation": "h", "y": -0.1},
        polar={"radialaxis": {"range": [0, 100], "tickvals": [0, 25, 50, 75, 100]}},
        title=None,
    )
    return figure.to_plotly_json()


def category_bars(comparison: Comparison) -> dict[str, Any]:
    """Grouped horizontal bars, one group per category (top to bottom in questionnaire order),
    one bar per provider: readable on a narrow screen where a radar's labels collide."""
    labels = category_labels(comparison.categories)
    figure = go.Figure()
    for index, provider in enumerate(comparison.providers):
        figure.add_trace(
            go.Bar(
                name=_safe(provider),
                x=_values(comparison.categories, provider),
                y=labels,
                orientation="h",
                text=_hover(comparison.categories, provider),
                textposition="none",
                marker={"color": _colour(index)},
                hovertemplate="%{y}: %{text}<extra>%{fullData.name}</extra>",
            )
        )
    rows = max(1, len(labels)) * max(1, len(comparison.providers))
    figure.update_layout(
        barmode="group",
        height=min(2000, 120 + 14 * rows),
        margin={"l": 200, "r": 10, "t": 30, "b": 40},
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom"},
        xaxis={"range": [0, 100], "title": "score"},
        yaxis={"autorange": "reversed", "automargin": True},
        title=None,
    )
    return figure.to_plotly_json()


def category_labels(categories: Sequence[CategoryComparison]) -> list[str]:
    """Escaped category titles in order; a title used twice gets its id, since plotly would
    merge two equal category labels into one."""
    titles = [c.title for c in categories]
    return [
        _safe(c.title if titles.count(c.title) == 1 else f"{c.title} ({c.id})") for c in categories
    ]


def _values(categories: Sequence[CategoryComparison], provider: str) -> list[float]:
    return [round(_score(c, provider) or 0.0, 1) for c in categories]


def _hover(categories: Sequence[CategoryComparison], provider: str) -> list[str]:
    """Per category: the score or "not scored", red flags, and whether providers differ."""
    texts = []
    for category in categories:
        score = _score(category, provider)
        parts = [NOT_SCORED if score is None else f"{round(score)} / 100"]
        flags = category.red_flags.get(provider, 0)
        if flags:
            parts.append(f"{flags} red flag{'s' if flags > 1 else ''}")
        if category.differs:
            parts.append("providers differ here")
        texts.append(_safe(", ".join(parts)))
    return texts


def _score(category: CategoryComparison, provider: str) -> float | None:
    return category.scores.get(provider)


def _safe(text: str) -> str:
    return html.escape(str(text), quote=False)


def _colour(index: int) -> str:
    return PROVIDER_COLOURS[index % len(PROVIDER_COLOURS)]


def _symbol(index: int) -> str:
    return PROVIDER_SYMBOLS[index % len(PROVIDER_SYMBOLS)]


def _translucent(colour: str, alpha: float = 0.15) -> str:
    red, green, blue = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({red}, {green}, {blue}, {alpha})"
