"""STACK-*: the GPU host stack, inventoried and patched (DESIGN §2, §5).

patching (STACK-001..003 below the bulletin baseline, STACK-005 past the patch SLA), versions
(STACK-004 unknown versions), cdi (STACK-006).
"""

from __future__ import annotations

from posture.rules.stack import cdi, patching, versions

__all__ = ["cdi", "patching", "versions"]
