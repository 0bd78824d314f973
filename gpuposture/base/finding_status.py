"""A finding's status as people read it: its effective status.

DESIGN §5: a risk is accepted "with a reason and an expiry, after which it is open again". The
stored status changes only when an evaluation reopens the finding (posture.finding_store, which
records the reopening and its audit event), and without a broker nothing evaluates on a clock.
So every reader reads the effective status through this module instead: an accepted finding
whose `accepted_until` has passed reads "open" (the pages, the API and its filters, the
exports, the counts), while its row stays as stored until that evaluation. An acceptance
without an expiry (none is made today; older rows) never lapses.

One rule, in three forms: for a value in Python (`effective_status`), as a database condition
(`status_q`, applied in SQL so lists page and count as before), and as a column to group or
sort by (`effective_status_expr`). `prefix` reaches the finding through a relation
(`"finding__"` from its tenant links, `"findings__"` from a tenant). It sits in the base layer
so that tenants can read it without importing posture.
"""

from __future__ import annotations

from datetime import datetime

from django.db.models import Case, CharField, F, Q, Value, When

from gpuposture.base.enums import FindingStatus

OPEN, ACCEPTED = FindingStatus.OPEN.value, FindingStatus.ACCEPTED.value


def acceptance_lapsed(status: str, accepted_until: datetime | None, now: datetime) -> bool:
    """Accepted, with an expiry at or before `now`: open again, whatever the row still says."""
    return status == ACCEPTED and accepted_until is not None and accepted_until <= now


def effective_status(status: str, accepted_until: datetime | None, now: datetime) -> str:
    """The status shown: "open" for a lapsed acceptance, else the stored one."""
    return OPEN if acceptance_lapsed(status, accepted_until, now) else status


def lapsed_q(now: datetime, prefix: str = "") -> Q:
    """Findings whose acceptance has lapsed but no evaluation has reopened yet."""
    return Q(**{f"{prefix}status": ACCEPTED, f"{prefix}accepted_until__lte": now})


def status_q(status: str, now: datetime, prefix: str = "") -> Q:
    """Findings whose effective status is `status` (one of FindingStatus)."""
    stored = Q(**{f"{prefix}status": status})
    if status == OPEN:
        return stored | lapsed_q(now, prefix)
    if status == ACCEPTED:
        # Spelled out rather than negated: an acceptance with no expiry stays accepted.
        current = Q(**{f"{prefix}accepted_until__isnull": True}) | Q(
            **{f"{prefix}accepted_until__gt": now}
        )
        return stored & current
    return stored


def effective_status_expr(now: datetime, prefix: str = "") -> Case:
    """The effective status as a column (to group by, or sort by)."""
    return Case(
        When(lapsed_q(now, prefix), then=Value(OPEN)),
        default=F(f"{prefix}status"),
        output_field=CharField(),
    )
