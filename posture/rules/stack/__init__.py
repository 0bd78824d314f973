"""STACK-*: the GPU host stack, inventoried and patched (DESIGN §2, §5).

patching (STACK-001..003 below the bulletin baseline, STACK-005 past the patch SLA), versions
(STACK-004 unknown versions), cdi (STACK-006), visible_devices (STACK-008: the toolkit honours
NVIDIA_VISIBLE_DEVICES from unprivileged pods).
"""

from __future__ import annotations

from posture.rules.stack import cdi, patching, versions, visible_devices

__all__ = ["cdi", "patching", "versions", "visible_devices"]
