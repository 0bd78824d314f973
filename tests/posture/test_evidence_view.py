"""Evidence as nested tables (posture.evidence_view): a table of shapes the checks write. PURE."""

from __future__ import annotations

import pytest

from posture.evidence_view import MAX_DEPTH, evidence_tree


def test_a_mapping_is_a_field_value_table():
    node = evidence_tree({"node": "gpu-1", "honours_env": True, "toolkit": None})
    assert node.kind == "map"
    assert [(k, v.text) for k, v in node.rows] == [
        ("node", "gpu-1"),
        ("honours env", "yes"),
        ("toolkit", "—"),
    ]


def test_a_list_of_mappings_is_a_table_with_a_column_per_key():
    node = evidence_tree([{"party": "alpha", "pods": 2}, {"party": "beta", "class": "external"}])
    assert node.kind == "table" and node.columns == ["party", "pods", "class"]
    assert [[c.text for c in row] for row in node.cells] == [
        ["alpha", "2", "—"],
        ["beta", "—", "external"],
    ]


@pytest.mark.parametrize(
    ("value", "kind", "text"),
    [
        (["time_slicing", "mps"], "inline", "time_slicing, mps"),
        ([], "inline", "(none)"),
        ([f"pod-{i}" for i in range(20)], "list", ""),
        (["x" * 100], "list", ""),
        (3, "scalar", "3"),
        (False, "scalar", "no"),
    ],
)
def test_lists_and_scalars(value, kind, text):
    node = evidence_tree(value)
    assert node.kind == kind and node.text == text


def test_nesting_nests_and_is_bounded():
    node = evidence_tree({"after": {"subjects": [{"kind": "Group", "name": "ops"}]}})
    inner = node.rows[0][1].rows[0][1]
    assert inner.kind == "table" and inner.columns == ["kind", "name"]
    deep: object = "bottom"
    for _ in range(MAX_DEPTH + 3):
        deep = {"k": deep}
    node = evidence_tree(deep)
    for _ in range(MAX_DEPTH):
        node = node.rows[0][1]
    assert node.kind == "scalar" and "bottom" in node.text  # compact text past the bound
