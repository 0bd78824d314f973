"""Tenants' display names as whole phrases of text (tenants.redaction). PURE.

A display name may be several words ("Beta Corp"): text is scanned for names as whole phrases,
longest first. A name of several words is matched in any case and spacing ("beta  corp" in a
typed reason is still them); a name of one word only with the capitalisation the tenant gave
it, because a one-word name is a word of prose too."""

from __future__ import annotations

import re
from functools import lru_cache

# Where a name stands alone: not inside a longer name ("beta-testers", "team-Beta Corp").
_BEFORE, _AFTER = r"(?<![\w@.-])", r"(?![\w@-])"


def fold(phrase: str) -> str:
    """A name as compared: words joined by one space, case folded."""
    return " ".join(phrase.split()).casefold()


def phrase_pattern(name: str) -> str:
    """`name` as a regular expression: several words in any case and spacing, one word as
    written."""
    words = name.split()
    if len(words) == 1:
        return re.escape(words[0])
    return "(?i:" + r"\s+".join(re.escape(w) for w in words) + ")"


@lru_cache(maxsize=1024)
def phrase_scan(names: frozenset[str]) -> re.Pattern[str]:
    """One scan for `names` as whole phrases, longest first (an alternation takes the first
    that matches: "Beta Corp Labs" before "Beta Corp"). Cached: a page asks for the same few."""
    ordered = sorted(names, key=lambda n: (-len(n.split()), -len(n), n))
    alternation = "|".join(phrase_pattern(n) for n in ordered)
    return re.compile(f"{_BEFORE}(?:{alternation}){_AFTER}")
