"""SHARE-*: how tenants share physical GPUs (DESIGN §2, §3, §5).

time_slicing (SHARE-001, SHARE-005), mig (SHARE-002), modes (SHARE-003), approvals
(SHARE-004, judged with DRIFT-004), mps (SHARE-006), sensitive (SHARE-007), vgpu (SHARE-008),
mig_state (SHARE-009: a failed or stuck MIG reconfiguration);
parties holds what they share: who holds a GPU resource and whether two parties must meet.
"""

from __future__ import annotations

from posture.rules.share import (
    approvals,
    mig,
    mig_state,
    modes,
    mps,
    sensitive,
    time_slicing,
    vgpu,
)

__all__ = ["approvals", "mig", "mig_state", "modes", "mps", "sensitive", "time_slicing", "vgpu"]
