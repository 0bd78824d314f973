"""What a finding keeps when its cause comes back (docs/findings.md, "When a finding comes
back"). A finding's identity is (check, subject) (DESIGN §5): when its cause goes away the
score resolves it (resolved_at), and when the same cause is seen again the same finding opens
again, on the same id. The store rewrites the row (open, resolved_at cleared); this module
records what that rewrite would otherwise erase:

- a `recur` audit event for each finding that came back, keeping when it had resolved
  (`before`): its history reads "resolved" on that day, then "back" on this one;
- the risk acceptance it held when it resolved no longer applies: the cause was gone, and what
  comes back is judged afresh (other replicas, another image, another bulletin). Its fields
  are cleared, so an open finding never reports an acceptance; the acceptance is kept as an
  EarlierAcceptance of the finding itself (`source` is the finding), so its page and the API
  still show it and the accept form is filled from it; a `lapse` audit event says it resolved
  on DAY and came back on DAY.

Resolving records nothing here: one score may resolve tens of thousands of findings (a subject
widened by an upgrade, a namespace deleted) and does so in bulk UPDATEs, the row's resolved_at
saying when; the `recur` event keeps that time once the row no longer does. A score in which
nothing came back costs nothing more; else one read per batch of them before the store writes,
and one audit event each (two, and a read of its tenants, where an acceptance lapsed)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from audit.services import audit_record
from gpuposture.base.batching import IDS_PER_QUERY
from posture.acceptance_carry import acceptance_state, subject_text
from posture.models import EarlierAcceptance, Finding

RESOLVED_LAPSE = "resolved"  # a `lapse` event's `lapsed`: its finding resolved, then came back
# A finding's acceptance fields when it holds none (what a lapsed acceptance leaves).
NO_ACCEPTANCE: dict[str, Any] = {
    "accepted_by": None,
    "accepted_reason": "",
    "accepted_until": None,
    "accepted_at": None,
    "accepted_basis": None,
}


@dataclass(slots=True)
class Back:
    """A resolved finding seen again in this score, as it was when it resolved."""

    finding: Finding
    resolved_at: datetime | None
    acceptance: dict[str, Any] | None  # acceptance_state of one held when it resolved, else None


def held_when_resolved(finding: Finding) -> bool:
    """It was under a risk acceptance when its cause went away: one with an expiry after the
    moment it resolved. A withdrawn acceptance has none (posture.services.finding_reopen), an
    expired one ended before; an acceptance without an expiry (none is made today) is left."""
    until, resolved = finding.accepted_until, finding.resolved_at
    return until is not None and (resolved is None or until > resolved)


def returns_read(pks: list[int]) -> list[Back]:
    """The findings coming back in this score, read before the store rewrites them (their
    resolved_at and acceptance as they stood). One query per batch; none when none came back."""
    back = []
    for start in range(0, len(pks), IDS_PER_QUERY):
        rows = Finding.objects.filter(pk__in=pks[start : start + IDS_PER_QUERY]).order_by("pk")
        for finding in rows.select_related("accepted_by").defer("evidence", "accepted_basis"):
            held = acceptance_state(finding) if held_when_resolved(finding) else None
            back.append(Back(finding, finding.resolved_at, held))
    return back


def returns_record(back: list[Back], *, now: datetime) -> None:
    """After the store wrote the rows: clear the acceptances that lapsed, keep each as an
    EarlierAcceptance of its own finding, and record `recur` (and `lapse`) audit events.
    Before posture.acceptance_carry, which may accept a wide finding that came back over
    narrower accepted ones: that acceptance is the carried one, not the lapsed one."""
    lapsed = [b for b in back if b.acceptance is not None]
    ids = [b.finding.pk for b in lapsed]
    for start in range(0, len(ids), IDS_PER_QUERY):
        Finding.objects.filter(pk__in=ids[start : start + IDS_PER_QUERY]).update(**NO_ACCEPTANCE)
    EarlierAcceptance.objects.bulk_create([_kept(b.finding, now) for b in lapsed])
    for item in back:
        _events_record(item, now)


def _kept(finding: Finding, now: datetime) -> EarlierAcceptance:
    """The lapsed acceptance, as an earlier acceptance of the finding itself (1 of 1 subject)."""
    return EarlierAcceptance(
        finding=finding,
        source=finding,
        subject=subject_text(finding)[:400],
        accepted_by=finding.accepted_by,
        reason=finding.accepted_reason,
        until=finding.accepted_until,
        carried=False,
        covers=1,
        of=1,
        recorded_at=now,
    )


def _events_record(item: Back, now: datetime) -> None:
    finding, resolved = item.finding, _iso(item.resolved_at)
    audit_record(
        actor="system",
        action="recur",
        obj=finding,
        before={"status": Finding.Status.RESOLVED.value, "resolved_at": resolved},
        after={"status": Finding.Status.OPEN.value, "resolved_at": None, "back_at": _iso(now)},
    )
    if item.acceptance is None:
        return
    finding.status = Finding.Status.OPEN
    for field, value in NO_ACCEPTANCE.items():
        setattr(finding, field, value)
    after = {
        **acceptance_state(finding),
        "lapsed": RESOLVED_LAPSE,
        "lapsed_until": item.acceptance["accepted_until"],
        "resolved_at": resolved,
        "back_at": _iso(now),
    }
    audit_record(actor="system", action="lapse", obj=finding, before=item.acceptance, after=after)


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment else None
