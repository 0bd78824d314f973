"""Conditions a CSAF advisory states in its notes rather than in its product names.

NVIDIA writes some limits of an exposure as prose: "This does not impact use cases where CDI is
used." (a vulnerability's summary), "CVE-2025-23266 does not affect systems where crun is used as
the low-level runtime." (a document note naming the CVE). Sentences phrased as a condition are
kept verbatim for inventory.conditions to judge; all other prose is ignored.
"""

from __future__ import annotations

import html
import re

from inventory.bulletins.csaf.document import Advisory, Vulnerability

_CONDITION = re.compile(
    r"\b(?:only\s+(?:when|if|in|for|with|on|applies)|(?:does|do)\s+not\s+(?:impact|affect)|"
    r"(?:is|are)\s+not\s+affected|unless)\b",
    re.IGNORECASE,
)
_CVE = re.compile(r"\bCVE-\d{4}-\d{4,}\b", re.IGNORECASE)
_MAX_SENTENCE = 400  # a condition is one sentence; longer text is a paragraph we do not parse


def sentences(text: str) -> list[str]:
    """Plain sentences of a note (its HTML tags and entities removed, whitespace collapsed)."""
    plain = re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", text))).strip()
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+(?=[A-Z])", plain) if s.strip()]


def note_conditions(advisory: Advisory, vulnerability: Vulnerability) -> tuple[str, ...]:
    """The condition sentences that apply to this vulnerability: from its own notes, and from
    the document's notes that name its CVE or name no CVE at all."""
    found: list[str] = []
    for text in vulnerability.notes:
        found += [s for s in sentences(text) if _is_condition(s)]
    for text in advisory.notes:
        for sentence in sentences(text):
            named = {c.upper() for c in _CVE.findall(sentence)}
            if _is_condition(sentence) and (not named or vulnerability.cve.upper() in named):
                found.append(sentence)
    return tuple(dict.fromkeys(found))


def _is_condition(sentence: str) -> bool:
    return len(sentence) <= _MAX_SENTENCE and _CONDITION.search(sentence) is not None
