"""DRIFT-*: what changed since the last sync, or since what was approved (DESIGN §5).

changes (DRIFT-001..003 and DRIFT-006, from recorded drift events), approvals (DRIFT-004),
pack (DRIFT-005: the deployed admission policy pack against the generated one).
"""

from __future__ import annotations

from posture.rules.drift import approvals, changes, pack

__all__ = ["approvals", "changes", "pack"]
