"""providers.charts: the provider comparison as a radar and as grouped bars, user text escaped."""

from __future__ import annotations

import json

import pytest

from providers.charts import (
    PROVIDER_COLOURS,
    category_bars,
    category_labels,
    comparison_radar,
)
from providers.scoring import CategoryComparison, Comparison

EVIL = "<img src=x onerror=alert(1)>"
EVIL_ESCAPED = "&lt;img src=x onerror=alert(1)&gt;"

COMPARISON = Comparison(
    providers=("Acme", "Beta & Co", EVIL),
    overall={"Acme": 80.0, "Beta & Co": 55.0, EVIL: 40.0},
    red_flags={"Acme": 0, "Beta & Co": 2, EVIL: 0},
    categories=(
        CategoryComparison(
            "partitioning",
            "Partitioning between customers",
            scores={"Acme": 90.0, "Beta & Co": 30.0, EVIL: 62.44},
            red_flags={"Acme": 0, "Beta & Co": 2, EVIL: 0},
            spread=60.0,
            differs=True,
        ),
        CategoryComparison(
            "patching",
            "Driver <b>patching</b>",
            scores={"Acme": 70.0, "Beta & Co": 75.0, EVIL: None},
            red_flags={"Acme": 0, "Beta & Co": 0, EVIL: 0},
            spread=5.0,
            differs=False,
        ),
        CategoryComparison(
            "logging",
            "Logs",
            scores={"Acme": None, "Beta & Co": 100.0},  # EVIL's questionnaire lacks it
            red_flags={"Acme": 0, "Beta & Co": 1},
            spread=None,
            differs=True,
        ),
    ),
)
TITLES = ["Partitioning between customers", "Driver &lt;b&gt;patching&lt;/b&gt;", "Logs"]


def test_radar_has_one_closed_trace_per_provider() -> None:
    figure = comparison_radar(COMPARISON)
    traces = figure["data"]
    assert [t["type"] for t in traces] == ["scatterpolar"] * 3
    assert [t["name"] for t in traces] == ["Acme", "Beta &amp; Co", EVIL_ESCAPED]
    assert all(t["fill"] == "toself" for t in traces)
    assert all(list(t["theta"]) == TITLES for t in traces)
    assert [list(t["r"]) for t in traces] == [
        [90.0, 70.0, 0.0],
        [30.0, 75.0, 100.0],
        [62.4, 0.0, 0.0],
    ]
    assert [t["line"]["color"] for t in traces] == list(PROVIDER_COLOURS[:3])
    assert len({t["marker"]["symbol"] for t in traces}) == 3  # not colour alone
    assert list(figure["layout"]["polar"]["radialaxis"]["range"]) == [0, 100]


def test_radar_hover_says_not_scored_red_flags_and_differences() -> None:
    acme, beta, evil = comparison_radar(COMPARISON)["data"]
    assert list(acme["text"]) == [
        "90 / 100, providers differ here",
        "70 / 100",
        "not scored, providers differ here",
    ]
    assert list(beta["text"])[0] == "30 / 100, 2 red flags, providers differ here"
    assert list(beta["text"])[2] == "100 / 100, 1 red flag, providers differ here"
    assert list(evil["text"])[1:] == ["not scored", "not scored, providers differ here"]
    assert "%{text}" in acme["hovertemplate"]


def test_figures_are_json_without_a_title() -> None:
    for figure in (comparison_radar(COMPARISON), category_bars(COMPARISON)):
        json.dumps(figure)
        assert not figure["layout"].get("title")


@pytest.mark.parametrize("chart", [comparison_radar, category_bars])
def test_user_text_is_escaped(chart) -> None:
    text = json.dumps(chart(COMPARISON))
    assert EVIL_ESCAPED in text
    assert "<img" not in text and "<b>" not in text
    assert "Beta &amp; Co" in text and "Beta & Co" not in text
    # The templates hold no user text, only plotly's own %{...} references.
    for trace in chart(COMPARISON)["data"]:
        assert "Acme" not in trace["hovertemplate"] and "img" not in trace["hovertemplate"]


def test_bars_group_providers_per_category() -> None:
    figure = category_bars(COMPARISON)
    traces = figure["data"]
    assert [t["type"] for t in traces] == ["bar"] * 3
    assert [t["name"] for t in traces] == ["Acme", "Beta &amp; Co", EVIL_ESCAPED]
    assert all(t["orientation"] == "h" and list(t["y"]) == TITLES for t in traces)
    assert [list(t["x"]) for t in traces] == [
        [90.0, 70.0, 0.0],
        [30.0, 75.0, 100.0],
        [62.4, 0.0, 0.0],
    ]
    assert list(traces[2]["text"])[1] == "not scored"
    assert figure["layout"]["barmode"] == "group"
    assert list(figure["layout"]["xaxis"]["range"]) == [0, 100]
    assert figure["layout"]["yaxis"]["autorange"] == "reversed"  # first category on top


def test_many_providers_reuse_the_palette() -> None:
    names = tuple(f"p{i}" for i in range(10))
    comparison = Comparison(
        names, {}, {}, (CategoryComparison("a", "A", {n: 50.0 for n in names}, {}, 0.0, False),)
    )
    traces = comparison_radar(comparison)["data"]
    assert len(traces) == 10
    assert traces[8]["line"]["color"] == PROVIDER_COLOURS[0]


def test_no_providers_or_categories_is_an_empty_figure() -> None:
    empty = Comparison((), {}, {}, ())
    assert comparison_radar(empty)["data"] == []
    assert category_bars(empty)["data"] == []


def test_equal_titles_are_told_apart_by_id() -> None:
    rows = (
        CategoryComparison("net-a", "Network", {}, {}, None, False),
        CategoryComparison("net-b", "Network", {}, {}, None, False),
        CategoryComparison("iam", "Identity & access", {}, {}, None, False),
    )
    assert category_labels(rows) == ["Network (net-a)", "Network (net-b)", "Identity &amp; access"]
