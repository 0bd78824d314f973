"""The container names in a record of another tenant's, and hiding them. PURE.

A container's name is its tenant's choice ("nsys-profile" says what it runs) and no word of a
viewer's hidden scope matches it: tenants.redaction hides the names a hidden tenant's record
holds in that record's title and evidence with these.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any


def container_names(value: Any) -> Iterator[str]:
    """Every container name a record holds: a `container` value, the items of a list under a
    key ending in `containers` (POD-005's `privileged_containers`), and within both."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            if key == "container" and isinstance(item, str) and item:
                yield item
            elif isinstance(key, str) and key.endswith("containers") and isinstance(item, list):
                yield from (i for i in item if isinstance(i, str) and i)
            yield from container_names(item)
    elif isinstance(value, list):
        for item in value:
            yield from container_names(item)


def without_names(value: Any, names: frozenset[str], hidden: str) -> Any:
    """`value` with each string that is one of `names` hidden, at any depth."""
    if not names:
        return value
    if isinstance(value, str):
        return hidden if value in names else value
    if isinstance(value, Mapping):
        return {key: without_names(item, names, hidden) for key, item in value.items()}
    if isinstance(value, list):
        return [without_names(item, names, hidden) for item in value]
    return value


def without_words(text: str, words: frozenset[str], hidden: str) -> str:
    """`text` with each of `words` (whole, as a DNS label stands in a title) hidden."""
    for word in sorted(words, key=len, reverse=True):
        text = re.sub(rf"(?<![\w.-]){re.escape(word)}(?![\w.-])", hidden, text)
    return text
