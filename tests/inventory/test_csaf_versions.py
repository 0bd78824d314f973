"""Component-aware version order (pure)."""

from __future__ import annotations

import pytest

from inventory.bulletins.csaf.versions import compare, is_below, parse_version


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        ("535.216.01", (535, 216, 1)),
        ("v1.16.1", (1, 16, 1)),
        ("vGPU 16.8", (16, 8)),
        ("1.0-rc1", (1, 0, "rc1")),
        ("", None),
        ("All driver versions", None),
        ("535.x (latest)", None),
    ],
)
def test_parse_version(text, parts):
    assert parse_version(text) == parts


@pytest.mark.parametrize(
    ("a", "b", "order"),
    [
        ("535.216.01", "535.104.05", 1),
        ("1.17.4", "v1.16.1", 1),
        ("v1.17", "1.17.0", 0),
        ("24.9.2", "v24.9.10", -1),
        ("570.86.15", "570.86.16", -1),
        ("1.0-rc1", "1.0", -1),
        ("0.13.0", "0.13.0", 0),
    ],
)
def test_compare(a, b, order):
    assert compare(a, b) == order
    assert compare(b, a) == -order


def test_compare_refuses_non_versions():
    with pytest.raises(ValueError, match="not a version"):
        compare("latest", "1.0")


@pytest.mark.parametrize(
    ("version", "bound", "inclusive", "below"),
    [
        ("1.16.1", "v1.16.1", True, True),
        ("1.16.1", "v1.16.1", False, False),
        ("535.230.01", "535.230.02", False, True),
        ("535.230.02", "535.230.02", False, False),
        ("1.16.2", "1.16.1", True, False),
    ],
)
def test_is_below(version, bound, inclusive, below):
    assert is_below(version, bound, inclusive) is below
