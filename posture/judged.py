"""Which checks a sync let judge. PURE.

A finding is `resolved` only when its check looked and no longer fires (DESIGN §5). A check
whose `needs` (posture.rules.registry.Check) include a kind the cluster's last full sync
certainly did not read (inventory.kinds_read) did not look: its stored findings are kept as
they were, and each says why it was not re-judged.

POD-003 and POD-005 read a claim's node path from the PersistentVolume bound to it: a sync that
read no PersistentVolume judged the pods' own hostPath volumes but not their claims, so only
the findings that came through a claim are kept as they were (`through_claims`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from posture.rules import CHECKS


def checks_unjudged(unread: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """Check id -> the kinds it needs that were not read, for each check that was not judged."""
    missing = set(unread)
    found = {c.id: tuple(k for k in c.needs if k in missing) for c in CHECKS.values()}
    return {check_id: kinds for check_id, kinds in found.items() if kinds}


def unjudged_note(check_id: str, unread: Iterable[str], evidence: Any = None) -> str:
    """What a finding of `check_id` (with this evidence) says when the last sync could not
    judge it; "" when it could."""
    unread = set(unread)
    kinds = checks_unjudged(unread).get(check_id)
    if kinds:
        return f"not re-judged in the last sync: it read no {' or '.join(kinds)}"
    if claims_unjudged(check_id, unread) and through_claims(evidence):
        return (
            f"not re-judged in the last sync: it read no {CLAIMS_NEED}, so the claims this "
            "finding came through were not judged"
        )
    return ""


CLAIMS_NEED = "PersistentVolume"
CLAIM_CHECKS = ("POD-003", "POD-005")
# The manifest fields (host_paths._volume_field) of a volume reached through a claim.
_CLAIM_FIELDS = (".persistentVolumeClaim.claimName", ".ephemeral.volumeClaimTemplate")


def claims_unjudged(check_id: str, unread: Iterable[str]) -> bool:
    """Whether `check_id` judges claims and the sync read no PersistentVolume to judge them."""
    return check_id in CLAIM_CHECKS and CLAIMS_NEED in set(unread)


def through_claims(evidence: Any) -> bool:
    """Whether a POD-003 or POD-005 finding names a volume reached through a claim (its
    `volumes` or `host_path_volumes`), rather than only the pod's own hostPath volumes."""
    if not isinstance(evidence, dict):
        return False
    entries = [*(evidence.get("volumes") or ()), *(evidence.get("host_path_volumes") or ())]
    return any(
        isinstance(e, dict) and str(e.get("field", "")).endswith(_CLAIM_FIELDS) for e in entries
    )
