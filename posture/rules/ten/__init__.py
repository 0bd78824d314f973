"""TEN-*: tenancy itself (DESIGN §3, §5).

unclassified (TEN-001): a GPU workload in a namespace no tenant claims and the platform does
not own; its pods are judged as the system tenant `unclassified` by every other check.
"""

from __future__ import annotations

from posture.rules.ten import unclassified

__all__ = ["unclassified"]
