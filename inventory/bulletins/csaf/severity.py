"""How severe a CSAF vulnerability is: its CVSS scores (v2, v3, v4), else a qualitative rating
(CSAF 2.1), else the vendor's `threats` impact text; the words vendors use mapped to ours."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any


def product_scores(entries: list[Any]) -> dict[str, tuple[float | None, str | None]]:
    named: dict[str, list[Any]] = {}
    for entry in entries:
        products = entry.get("products") if isinstance(entry, Mapping) else None
        for product_id in products if isinstance(products, list) else ():
            named.setdefault(str(product_id), []).append(entry.get("content", entry))
    return {pid: score(found) for pid, found in named.items()}


def score(scores: list[Any]) -> tuple[float | None, str | None]:
    """The highest CVSS base score and its severity, over CVSS v2, v3 and v4 (`cvss_v4`, as
    CSAF 2.1 and vendors already publishing v4 write it): a v4-only or v2-only score is still
    a score. With no score, the worst CSAF 2.1 `qualitative_severity_rating` (severity only)."""
    best: tuple[float | None, str | None] = (None, None)
    for entry in scores:
        for key in ("cvss_v2", "cvss_v3", "cvss_v4"):
            cvss = entry.get(key) if isinstance(entry, Mapping) else None
            if not isinstance(cvss, Mapping) or not isinstance(cvss.get("baseScore"), int | float):
                continue
            value = float(cvss["baseScore"])
            if best[0] is None or value > best[0]:
                stated = cvss.get("baseSeverity")  # v2 states none: its own bands
                rated = _cvss_v2_severity(value) if key == "cvss_v2" else _cvss_severity(value)
                best = (value, stated if isinstance(stated, str) and stated else rated)
    if best[0] is None:
        rated = [
            entry.get("qualitative_severity_rating")
            for entry in scores
            if isinstance(entry, Mapping)
        ]
        best = (None, worst_rating(r for r in rated if isinstance(r, str)))
    return best


# Severity words, worst first, and the words vendors write for them (Red Hat's "Important",
# "Moderate"). "none" is a rating too (CVSS 0.0, CSAF 2.1's qualitative "none").
SEVERITY_WORDS = {
    "critical": "critical",
    "high": "high",
    "important": "high",
    "medium": "medium",
    "moderate": "medium",
    "low": "low",
    "none": "none",
}
_RANK = ("critical", "high", "medium", "low", "none")


def rating(text: str | None) -> str | None:
    """Our severity for a vendor's word ("Important" is high), or None when it is none of them."""
    words = re.findall(r"[a-z]+", (text or "").lower())
    return SEVERITY_WORDS.get(words[0]) if words else None


def worst_rating(texts: Iterable[str | None]) -> str | None:
    """The worst of several severity words, as our severity; None when none is one."""
    found = {rated for text in texts if (rated := rating(text))}
    return next((s for s in _RANK if s in found), None)


def threat_impact(threats: Any) -> str | None:
    """The worst `threats` entry of category `impact` (CSAF 2.0 / 2.1: free text; Red Hat
    writes its severity there, "Important"), as our severity; None when none says one."""
    found = threats if isinstance(threats, list) else []
    return worst_rating(
        threat.get("details")
        for threat in found
        if isinstance(threat, Mapping) and threat.get("category") == "impact"
    )


def _cvss_v2_severity(score: float) -> str:
    """CVSS v2 has no qualitative rating of its own; NVD's bands: 7.0 and up is high."""
    return "HIGH" if score >= 7.0 else "MEDIUM" if score >= 4.0 else "LOW"


def _cvss_severity(score: float) -> str | None:
    """The CVSS qualitative rating of a base score (v3 and v4 share it), for a score stated
    without its baseSeverity."""
    for floor, name in ((9.0, "CRITICAL"), (7.0, "HIGH"), (4.0, "MEDIUM"), (0.1, "LOW")):
        if score >= floor:
            return name
    return None
