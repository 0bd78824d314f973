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
        for key in _CVSS_KEYS:
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


# The CVSS JSON schemas CSAF embeds (v2.0, v3.0, v3.1; v4.0 in CSAF 2.1): baseScore is a
# number from 0.0 to 10.0, baseSeverity (v3, v4) one of these words.
_CVSS_KEYS = ("cvss_v2", "cvss_v3", "cvss_v4")
_BASE_SEVERITIES = ("NONE", "LOW", "MEDIUM", "HIGH", "CRITICAL")


def cvss_problem(entry: Mapping[str, Any]) -> str | None:
    """Why a score entry breaks the CVSS schemas ("cvss_v3.baseScore is '9.0', not a number
    from 0.0 to 10.0"), or None. Such an entry must refuse its document, never be read
    around: skipped, it takes its stated severity with it (a critical CVE read as high,
    or none), and 99 taken as a score outranks every real one."""
    for key in _CVSS_KEYS:
        if key not in entry:
            continue
        cvss = entry[key]
        if not isinstance(cvss, Mapping):
            return f"{key} is not an object"
        base = cvss.get("baseScore")
        # bool is an int to Python, not a number to JSON; NaN fails the comparison too.
        if isinstance(base, bool) or not isinstance(base, int | float) or not 0 <= base <= 10:
            return f"{key}.baseScore is {base!r}, not a number from 0.0 to 10.0"
        stated = cvss.get("baseSeverity")
        if key != "cvss_v2" and stated is not None and not _base_severity(stated):
            return f"{key}.baseSeverity is {stated!r}, not one of {', '.join(_BASE_SEVERITIES)}"
    return None


def _base_severity(stated: Any) -> bool:
    # Upper case in the schema; a lower-case word means the same and lowers nothing.
    return isinstance(stated, str) and stated.upper() in _BASE_SEVERITIES


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
