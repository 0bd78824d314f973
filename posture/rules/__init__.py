"""The check catalogue: importing this package registers every check (DESIGN §5).

Each family lives in its own module; importing them here is what fills CHECKS, so callers
import from `posture.rules`, never from a family module alone.
"""

from __future__ import annotations

from posture.rules import (
    approvals,
    cluster,
    drift,
    exposure,
    nodes_extra,
    patching,
    pods,
    pods_extra,
    pods_placement,
    providers,
    rbac,
    sharing,
    sharing_extra,
    stack,
    telemetry,
)
from posture.rules.registry import CHECKS, Check, FindingDraft, run_checks

__all__ = [
    "approvals",
    "CHECKS",
    "Check",
    "FindingDraft",
    "run_checks",
    "cluster",
    "telemetry",
    "drift",
    "exposure",
    "nodes_extra",
    "patching",
    "pods",
    "pods_extra",
    "pods_placement",
    "providers",
    "rbac",
    "sharing",
    "sharing_extra",
    "stack",
]
