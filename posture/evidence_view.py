"""A finding's evidence as something a person reads: nested tables, not JSON. PURE.

The checks write evidence of many shapes (a dict of facts, lists of pods, a list of dicts per
GPU, dicts of lists). `evidence_tree` turns any JSON value into nodes the template
`posture/_evidence.html` draws recursively, whatever the shape:

- a mapping becomes a two-column table (a field, its value);
- a list of mappings becomes a table with a column per key (the union, in first-seen order);
- a list of scalars becomes a comma-separated line (a short one) or a bulleted list;
- a scalar becomes its text (true/false as yes/no, null as an em dash);
- the value of a key known to hold a code (a sharing mode, a node's sharing strategy, a trust
  class, a stack component: WORDS_KEYS) reads as words (gpuposture.base.labels): the page says
  "time-slicing", "internal trusted"; the stored evidence and the API keep the codes.

Nesting is bounded (MAX_DEPTH) so a pathological document cannot make an unbounded page: what
lies deeper is shown as compact text."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gpuposture.base.labels import words

MAX_DEPTH = 6
INLINE_ITEMS = 6  # a list of up to this many short scalars reads best on one line
INLINE_CHARS = 80
# Evidence keys whose values (a string, or a list of strings) are codes, across the checks.
WORDS_KEYS = frozenset(
    {
        # sharing modes (tenants.policy.SHARING_MODES) and node sharing strategies
        "mode",
        "sharing_mode",
        "sharing_modes",
        "observed_mode",
        "sharing_strategy",
        "node_sharing_strategy",
        "forbidden_modes",
        # trust class slugs
        "trust_class",
        "owner_class",
        "stricter_class",
        "sensitive_class",
        "judged_as_class",
        "forbidden_by",
        "class",
        # GPU-stack components (inventory.components) and bulletin remediation categories
        "component",
        "category",
        # what an approved sharing request covers (tenants.policy.REQUEST_SCOPES)
        "scope",
    }
)


@dataclass(frozen=True)
class Node:
    """One piece of evidence: kind is "scalar", "map", "table", "inline" or "list"."""

    kind: str
    text: str = ""
    rows: list[tuple[str, Node]] = field(default_factory=list)  # map
    columns: list[str] = field(default_factory=list)  # table
    cells: list[list[Node]] = field(default_factory=list)  # table rows
    items: list[Node] = field(default_factory=list)  # list


def label(key: Any) -> str:
    """A key as a column heading: `gpu_uuid` reads "gpu uuid" (the key itself otherwise)."""
    return str(key).replace("_", " ")


def scalar_text(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def evidence_tree(value: Any, depth: int = 0) -> Node:
    """`value` (any JSON) as nodes to draw (see the module docstring)."""
    if isinstance(value, Mapping):
        if depth >= MAX_DEPTH:
            return Node("scalar", text=json.dumps(value, sort_keys=True, default=str))
        return Node("map", rows=[(label(k), _value(k, v, depth + 1)) for k, v in value.items()])
    if isinstance(value, list | tuple):
        return _sequence(list(value), depth)
    return Node("scalar", text=scalar_text(value))


def _value(key: Any, value: Any, depth: int) -> Node:
    """The node for `value` found under `key`: a code of a WORDS_KEYS key in words."""
    if key in WORDS_KEYS:
        if isinstance(value, str):
            value = words(value)
        elif isinstance(value, list) and all(isinstance(v, str) for v in value):
            value = [words(v) for v in value]
    return evidence_tree(value, depth)


def _sequence(values: list[Any], depth: int) -> Node:
    if depth >= MAX_DEPTH:
        return Node("scalar", text=json.dumps(values, default=str))
    if values and all(isinstance(v, Mapping) for v in values):
        columns: list[str] = []
        for row in values:
            columns += [k for k in row if k not in columns]
        cells = [[_value(c, row.get(c), depth + 1) for c in columns] for row in values]
        return Node("table", columns=[label(c) for c in columns], cells=cells)
    items = [evidence_tree(v, depth + 1) for v in values]
    if all(i.kind == "scalar" for i in items):
        text = ", ".join(i.text for i in items)
        if len(items) <= INLINE_ITEMS and len(text) <= INLINE_CHARS:
            return Node("inline", text=text or "(none)")
    return Node("list", items=items)
