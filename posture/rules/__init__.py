"""The check catalogue: importing this package registers every check (DESIGN §5).

Checks are filed by family, one package per check-id prefix (share, pod, k8s, stack, leak,
attr, drift, prov, ten, dra), each holding small modules of one purpose. Importing the
families here is what fills CHECKS, so callers import from `posture.rules`, never from a
family module alone. Helpers several families share live in posture/rules/common.py.
"""

from __future__ import annotations

from posture.rules import attr, dra, drift, k8s, leak, pod, prov, share, stack, ten
from posture.rules.registry import CHECKS, Check, FindingDraft, run_checks

__all__ = [
    "CHECKS",
    "Check",
    "FindingDraft",
    "attr",
    "dra",
    "drift",
    "k8s",
    "leak",
    "pod",
    "prov",
    "run_checks",
    "share",
    "stack",
    "ten",
]
