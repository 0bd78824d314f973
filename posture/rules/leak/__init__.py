"""LEAK-*: GPU memory passed between tenants (DESIGN §2, §5).

handover (LEAK-001 no reset between exclusive tenants), leftoverlocals (LEAK-002).
"""

from __future__ import annotations

from posture.rules.leak import handover, leftoverlocals

__all__ = ["handover", "leftoverlocals"]
