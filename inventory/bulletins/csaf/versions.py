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


_VERS_CONSTRAINT = re.compile(r"^\s*(?P<op>>=|<=|!=|<|>|=)?\s*(?P<version>\S+)\s*$")


def vers_contains(text: str, version: str) -> bool | None:
    """Whether `version` is in a `vers:` range ("vers:generic/>=1.17.0|<1.17.8"; several
    intervals may be listed), by the vers specification's algorithm; None when it cannot say."""
    scheme, _, body = text.strip().partition("/")
    if not scheme.startswith("vers:") or parse_version(version) is None:
        return None
    if body.strip() == "*":
        return True
    constraints: list[tuple[str, str]] = []
    for piece in body.split("|"):
        match = _VERS_CONSTRAINT.match(piece)
        if not match or parse_version(match["version"]) is None:
            return None
        constraints.append((match["op"] or "=", match["version"]))
    for op, bound in constraints:
        if op in ("=", "<=", ">=") and compare(version, bound) == 0:
            return True
        if op == "!=" and compare(version, bound) == 0:
            return False
    ranges = sorted(
        ((op, bound) for op, bound in constraints if op not in ("=", "!=")),
        key=lambda c: _sort_key(c[1]),
    )
    if not ranges:
        return False
    if ranges[0][0] in ("<", "<=") and compare(version, ranges[0][1]) < 0:
        return True
    if ranges[-1][0] in (">", ">=") and compare(version, ranges[-1][1]) > 0:
        return True
    return any(
        low_op in (">", ">=")
        and high_op in ("<", "<=")
        and compare(low, version) < 0 < compare(high, version)
        for (low_op, low), (high_op, high) in zip(ranges, ranges[1:], strict=False)
    )


def _sort_key(version: str) -> list[tuple[int, int | str]]:
    parsed = parse_version(version) or ()
    return [_key(p) for p in parsed + (0,) * (8 - len(parsed))]
