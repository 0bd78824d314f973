"""Component-aware version order for driver and tool versions (535.216.01, v1.16.1, vGPU 16.8)."""

from __future__ import annotations

import re

Part = int | str
Version = tuple[Part, ...]

_PREFIX = re.compile(r"^(?:vgpu\s+|v(?=\d))", re.IGNORECASE)
_SHAPE = re.compile(r"^\d[0-9A-Za-z]*(?:[.\-][0-9A-Za-z]+)*$")


def parse_version(text: str) -> Version | None:
    """Split a version into parts: numbers as ints, the rest as lower-case strings; None if none."""
    if not isinstance(text, str):
        return None
    cleaned = _PREFIX.sub("", text.strip())
    if not _SHAPE.match(cleaned):
        return None
    return tuple(_part(piece) for piece in re.split(r"[.\-]", cleaned))


def _part(piece: str) -> Part:
    return int(piece) if piece.isdigit() else piece.lower()


def _key(part: Part) -> tuple[int, int | str]:
    # A number sorts after a word in the same place, so 1.0-rc1 < 1.0 and 1.0 == 1.0.0.
    return (1, part) if isinstance(part, int) else (0, part)


def compare(a: str, b: str) -> int:
    """-1, 0 or 1 as version a is below, equal to or above version b; missing parts count as 0."""
    left, right = parse_version(a), parse_version(b)
    if left is None or right is None:
        raise ValueError(f"not a version: {a if left is None else b!r}")
    width = max(len(left), len(right))
    padded_left = [_key(p) for p in left + (0,) * (width - len(left))]
    padded_right = [_key(p) for p in right + (0,) * (width - len(right))]
    return (padded_left > padded_right) - (padded_left < padded_right)


def is_below(version: str, bound: str, inclusive: bool) -> bool:
    """True when version is under bound (or equal to it, if inclusive)."""
    order = compare(version, bound)
    return order < 0 or (inclusive and order == 0)
