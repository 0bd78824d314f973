"""ATTR-*: GPU use that cannot be attributed to a scheduled workload (DESIGN §2, §5).

hijack (ATTR-001), shared_gpus (ATTR-002), silent_nodes (ATTR-003).
"""

from __future__ import annotations

from posture.rules.attr import hijack, shared_gpus, silent_nodes

__all__ = ["hijack", "shared_gpus", "silent_nodes"]
