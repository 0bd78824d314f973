"""What becomes of a risk acceptance when a finding's subject widens (docs/findings.md, "When a
finding's subject widens"). A finding's identity is (check, subject) (DESIGN §5); when a check
reports a wider subject than before (STACK-008: the nodes the GPU Operator's toolkit runs on are
now one finding on their ClusterPolicy), the first score after the change resolves the narrow
findings and opens the wide one. An acceptance made on the narrow ones must not be lost without
a word, nor stretched over subjects nobody accepted:

- the wide finding opens (new, or back from resolved) in the same score in which narrower
  findings of its check that it lists in FindingDraft.covers resolve;
- if every subject it covers had such a finding under an active (unexpired) acceptance, it is
  accepted: until the earliest of their expiries, with their reasons and acceptors (a `carry`
  audit event naming the findings it came from);
- otherwise it stays open, and the acceptances that no longer apply are kept with it (a
  `lapse` audit event): its page and the API show them, and re-accepting is one form.

Both are EarlierAcceptance rows. A wide finding created over narrower live ones keeps the
earliest of their first_seen, accepted or not: the cause is the one first seen then.
Costs nothing in a score where no subject widened: the
matching is done on the rows the store already read, and only a widening reads or writes more
(a few queries per widened finding)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from audit.services import audit_record
from gpuposture.base.batching import IDS_PER_QUERY
from gpuposture.base.finding_status import effective_status
from posture.models import EarlierAcceptance, Finding

REASON_MAX = 2000  # Finding.accepted_reason's bound


@dataclass(frozen=True, slots=True)
class Widening:
    """A finding opening in this score over narrower ones that resolve in it."""

    fingerprint: str  # the wide finding's
    sources: tuple[int, ...]  # the narrower findings under an active acceptance
    of: int  # how many subjects the wide finding covers
    full: bool  # every one of them was accepted: the acceptance is carried


def acceptance_active(row: Any, now: datetime) -> bool:
    """An acceptance that still holds: accepted, and not past its expiry (none: holds)."""
    return effective_status(row.status, row.accepted_until, now) == Finding.Status.ACCEPTED


def widenings_find(
    candidates: Iterable[tuple[str, list[list[str]]]],
    existing: Mapping[str, Any],
    seen: Mapping[str, Any],
    now: datetime,
) -> list[Widening]:
    """The widenings of this score. `candidates`: (fingerprint, the subjects it covers) of
    each finding opening now with FindingDraft.covers set, each subject covered as the
    fingerprints it may have had (a pod's: each object of its owner chain below the wide
    subject); `existing`: the cluster's stored findings by fingerprint (status,
    accepted_until); `seen`: the fingerprints the checks reported this time (a finding not
    among them resolves).

    A covered subject is spanned by the findings among its fingerprints that resolve now
    (one Revision's finding for all its pods), or counts on its own where none does (the pods
    of a revision first seen now, a node added since). `of`: those findings and those
    subjects. Carried (`full`) only when every covered subject has such a finding and all of
    them are accepted: an acceptance is never stretched over pods nobody accepted."""
    found = []
    for fingerprint, covered in candidates:
        resolving: dict[str, None] = {}  # the narrower findings spanned, in order
        # Covered subjects with none, by the last of their fingerprints (a node; the owner
        # right below the wide subject: the pods of one new revision count once).
        unspanned: set[str] = set()
        for group in covered:
            live = [c for c in group if _resolving(c, existing, seen)]
            resolving.update(dict.fromkeys(live))
            if not live and group:
                unspanned.add(group[-1])
        accepted = [existing[c].pk for c in resolving if acceptance_active(existing[c], now)]
        if accepted:  # nothing accepted under it: nothing to carry or to say
            full = len(accepted) == len(resolving) and not unspanned
            of = len(resolving) + len(unspanned)
            found.append(Widening(fingerprint, tuple(accepted), of, full))
    return found


def _resolving(fingerprint: str, existing: Mapping[str, Any], seen: Mapping[str, Any]) -> bool:
    """A stored finding that is live and not reported this time: it resolves in this score."""
    row = existing.get(fingerprint)
    return row is not None and fingerprint not in seen and row.status in LIVE


LIVE = (Finding.Status.OPEN, Finding.Status.ACCEPTED)


def first_seen_carried(
    candidates: Iterable[tuple[str, list[list[str]]]],
    existing: Mapping[str, Any],
    seen: Mapping[str, Any],
) -> dict[str, datetime]:
    """fingerprint -> when its cause was first seen, for each wide finding created in this
    score over narrower live ones that resolve in it (accepted or not): the earliest of their
    first_seen, since it is the same cause under a wider subject. One query per IDS_PER_QUERY of
    them; none in a score where no subject widened."""
    resolving = {
        fingerprint: [
            existing[c].pk
            for group in covered
            for c in group
            if fingerprint not in existing and _resolving(c, existing, seen)
        ]
        for fingerprint, covered in candidates
    }
    ids = sorted({pk for pks in resolving.values() for pk in pks})
    first: dict[int, datetime] = {}
    for start in range(0, len(ids), IDS_PER_QUERY):
        rows = Finding.objects.filter(pk__in=ids[start : start + IDS_PER_QUERY]).order_by()
        first.update(rows.values_list("pk", "first_seen"))
    return {fp: min(first[pk] for pk in pks) for fp, pks in resolving.items() if pks}


def acceptances_carry(widenings: list[Widening], *, now: datetime) -> None:
    """Carry (or record as lapsed) the acceptances of each widening, after the score wrote
    its findings and their tenants: two reads for all of them, then per widened finding its
    rows, its acceptance when carried, and its audit event."""
    if not widenings:
        return
    source_ids = {pk for w in widenings for pk in w.sources}
    sources = Finding.objects.filter(pk__in=source_ids).select_related("accepted_by")
    earlier = {f.pk: f for f in sources}
    targets = Finding.objects.filter(fingerprint__in=[w.fingerprint for w in widenings])
    wide = {f.fingerprint: f for f in targets.select_related("accepted_by")}
    rows = []
    for widening in widenings:
        finding = wide[widening.fingerprint]
        accepted = sorted((earlier[pk] for pk in widening.sources), key=_expiry_order)
        before = acceptance_state(finding)
        if widening.full:
            _carry(finding, accepted)
        rows += [
            EarlierAcceptance(
                finding=finding,
                source=old,
                subject=subject_text(old)[:400],
                accepted_by=old.accepted_by,
                reason=old.accepted_reason,
                until=old.accepted_until,
                carried=widening.full,
                covers=len(accepted),
                of=widening.of,
                recorded_at=now,
            )
            for old in accepted
        ]
        after = {
            **acceptance_state(finding),
            "from_findings": [old.pk for old in accepted],
            "earlier": [_earlier_state(old) for old in accepted],
            "covers": len(accepted),
            "of": widening.of,
        }
        action = "carry" if widening.full else "lapse"
        audit_record(actor="system", action=action, obj=finding, before=before, after=after)
    EarlierAcceptance.objects.bulk_create(rows)


def _expiry_order(finding: Finding) -> tuple[bool, datetime | None, int]:
    return (finding.accepted_until is None, finding.accepted_until, finding.pk)


def _carry(finding: Finding, accepted: list[Finding]) -> None:
    """Accept the wide finding as its narrower findings were, until the first of their
    expiries; the acceptor is the one whose acceptance ends first (the one that bounds it:
    the only one when one person accepted them all); every reason is kept, by subject."""
    first = accepted[0]  # the earliest expiry (none: holds until withdrawn)
    finding.status = Finding.Status.ACCEPTED
    finding.accepted_until = first.accepted_until
    finding.accepted_by = first.accepted_by
    reasons = "; ".join(f"{subject_text(old)}: {old.accepted_reason}" for old in accepted)
    text = f"Carried from {len(accepted)} narrower findings, each accepted: {reasons}"
    finding.accepted_reason = text if len(text) <= REASON_MAX else text[: REASON_MAX - 3] + "..."
    # Accepted as of the earliest of them (a change after it was not seen by that acceptor);
    # unknown if any is.
    moments = [old.accepted_at for old in accepted]
    finding.accepted_at = None if None in moments else min(m for m in moments if m)
    fields = ["status", "accepted_by", "accepted_reason", "accepted_until", "accepted_at"]
    finding.save(update_fields=fields)


def _earlier_state(old: Finding) -> dict[str, Any]:
    until = old.accepted_until
    return {
        "finding": old.pk,
        "subject": subject_text(old),
        "accepted_by": old.accepted_by.get_username() if old.accepted_by_id else None,
        "accepted_reason": old.accepted_reason,
        "accepted_until": until.isoformat() if until else None,
    }


def subject_text(finding: Finding) -> str:
    """ "Node gpu-3", "Deployment team-a/train": the finding's subject as a line says it."""
    where = f"{finding.subject_namespace}/" if finding.subject_namespace else ""
    key = f" ({finding.key})" if finding.key else ""
    return f"{finding.subject_kind} {where}{finding.subject_name}{key}"


def acceptance_state(finding: Finding) -> dict[str, Any]:
    """What the audit log keeps of a finding's risk acceptance."""
    until = finding.accepted_until
    return {
        "check": finding.check_id,
        "tenants": sorted(finding.tenants.values_list("slug", flat=True)),
        "status": finding.status,
        "accepted_by": finding.accepted_by.get_username() if finding.accepted_by_id else None,
        "accepted_reason": finding.accepted_reason,
        "accepted_until": until.isoformat() if until else None,
    }
