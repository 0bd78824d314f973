"""Path converters for the pages' URLs."""

from __future__ import annotations


class StoredNameConverter:
    """Any non-empty name as it was stored, '/' and newlines included (`path` stops at a
    newline): a link to an object never fails to reverse, so the page listing it never 500s
    on a name an older version or a hand-made file let in. reverse() percent-encodes it."""

    regex = r"[\s\S]+"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value
