"""Which checks a sync let judge. PURE.

A finding is `resolved` only when its check looked and no longer fires (DESIGN §5). A check
whose `needs` (posture.rules.registry.Check) include a kind the cluster's last full sync
certainly did not read (inventory.kinds_read) did not look: its stored findings are kept as
they were, and each says why it was not re-judged.
"""

from __future__ import annotations

from collections.abc import Iterable

from posture.rules import CHECKS


def checks_unjudged(unread: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """Check id -> the kinds it needs that were not read, for each check that was not judged."""
    missing = set(unread)
    found = {c.id: tuple(k for k in c.needs if k in missing) for c in CHECKS.values()}
    return {check_id: kinds for check_id, kinds in found.items() if kinds}


def unjudged_note(check_id: str, unread: Iterable[str]) -> str:
    """What a finding of `check_id` says when the last sync could not judge it; "" when it
    could."""
    kinds = checks_unjudged(unread).get(check_id)
    if not kinds:
        return ""
    return f"not re-judged in the last sync: it read no {' or '.join(kinds)}"
