"""One change drift found between two good syncs (inventory/drift.py). PURE."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class DriftChange:
    kind: str  # "sharing_config", "component", "node" or "rbac"
    check_id: str
    subject_kind: str
    subject_namespace: str
    subject_name: str
    summary: str
    before: dict[str, Any] = field(default_factory=dict)
    after: dict[str, Any] = field(default_factory=dict)
    nodes: tuple[str, ...] = ()
