"""Store what the checks found: upsert a cluster's findings from the drafts, resolve what no
check reported, and keep each finding's tenants in step (posture.finding_links). Called by
posture.services.posture_evaluate once per cluster.

Built for worlds of hundreds of thousands of findings: the stored ones are read as plain rows
(no model instances, no evidence decoded: Finding.evidence_digest stands for it, computed with
the fingerprint by posture.finding_digests), only the findings whose stored fields change are
rewritten, and every finding seen again unchanged has its last_seen moved by one UPDATE per
cluster."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction

from audit.services import audit_record
from gpuposture.base.batching import IDS_PER_QUERY
from gpuposture.base.finding_status import acceptance_lapsed
from inventory.bulk import db_datetime, rows_insert, rows_update
from inventory.models import Cluster
from posture.acceptance_carry import (
    acceptance_state,
    acceptances_carry,
    first_seen_carried,
    widenings_find,
)
from posture.finding_digests import evidence_text, finding_fingerprint, subject_fingerprint
from posture.finding_links import finding_tenants_write
from posture.finding_return import returns_read, returns_record
from posture.models import Finding
from posture.rules import CHECKS, FindingDraft
from posture.rules.drift.changes import change_after
from posture.rules.stack.accepted import BEYOND, exposure_beyond
from tenants.models import Tenant

LIVE_STATUSES = (Finding.Status.OPEN, Finding.Status.ACCEPTED)


def stored_title(title: str) -> str:
    """The title as Finding.title holds it: a longer one ends in "…" where it is cut, so that
    a reader sees it was (the checks keep theirs within TITLE_MAX, naming objects by count
    past it)."""
    limit = Finding._meta.get_field("title").max_length or len(title)
    return title if len(title) <= limit else f"{title[: limit - 1]}…"


@dataclass(slots=True)
class Stored:
    """A stored finding as the refresh compares it (read by values_list, no model)."""

    pk: int
    status: str
    severity: str
    title: str
    exposure: int
    evidence_digest: str
    accepted_until: datetime | None
    resolved_at: datetime | None
    check_id: str = ""
    accepted_at: datetime | None = None
    accepted_basis: dict | None = None  # what a bulletin finding's acceptance saw
    evidence: str | None = None  # JSON text, only set when the row is rewritten

    def acceptance_expired(self, now: datetime) -> bool:
        return acceptance_lapsed(self.status, self.accepted_until, now)

    def acceptance_outdated(self, draft: FindingDraft, severity: str, now: datetime) -> dict | None:
        """What its draft lists that this row's acceptance did not see: a drift change
        detected after it (posture.rules.drift.changes.change_after), or bulletin exposure
        beyond it (a new CVE, a higher fix, a higher `severity`: posture.rules.stack.
        accepted). Only an acceptance still in force asks (the evidence of other rows is not
        looked at)."""
        if self.status != Finding.Status.ACCEPTED or self.acceptance_expired(now):
            return None
        change = change_after(draft.check_id, draft.evidence, self.accepted_at)
        if change is not None:
            return change
        more = exposure_beyond(self.accepted_basis, draft.check_id, draft.evidence, severity)
        if more is not None:
            more["detected_at"] = now.isoformat()
        return more


STORED_FIELDS = (
    "fingerprint",
    "pk",
    "status",
    "severity",
    "title",
    "exposure",
    "evidence_digest",
    "accepted_until",
    "resolved_at",
    "check_id",
    "accepted_at",
    "accepted_basis",
)


@transaction.atomic
def findings_refresh(
    *,
    cluster: Cluster,
    drafts: Iterable[FindingDraft],
    now: datetime,
    unjudged: Collection[str] = (),
    held: Collection[str] = (),
) -> dict[str, int]:
    """Upsert the drafts as findings of this cluster (no duplicates across runs), set the
    tenants each affects, and resolve the cluster's live findings that no check reported this
    time. Only findings whose stored fields change are rewritten; the others get their
    last_seen moved; tenant links are inserted and deleted in bulk.

    The stored findings of the `unjudged` checks (a kind they need was not read:
    posture.judged) are kept as they were: not resolved, not rewritten, last_seen where it
    was; only what such a check reports for the first time is added. `held`: fingerprints of
    other findings this run could not judge (posture.judged.through_claims), kept likewise.

    A resolved finding reported again opens on its own id: its `recur` event, and the end of
    the acceptance it held when it resolved, are posture.finding_return's."""
    tenant_ids = dict(Tenant.objects.values_list("slug", "pk"))
    # Read into a dict: no ORDER BY (the model's ordering), which before the first score's
    # ANALYZE SQLite answered with a temporary B-tree sort of every finding of the cluster.
    rows = Finding.objects.filter(cluster=cluster).order_by().values_list(*STORED_FIELDS)
    existing = {fingerprint: Stored(*rest) for fingerprint, *rest in rows.iterator(5000)}
    counts = {"opened": 0, "reopened": 0, "still_open": 0, "resolved": 0}
    to_create: list[tuple[Any, ...]] = []
    changed: list[Stored] = []
    resolved: list[int] = []
    # fingerprint -> the tenants it affects now, each with its own exposure (None: the
    # finding's; posture.finding_links)
    affects: dict[str, dict[int, int | None]] = {}
    expired: list[int] = []  # findings whose risk acceptance is past its date
    back: list[int] = []  # resolved findings whose cause is seen again (posture.finding_return)
    outdated: dict[int, dict] = {}  # accepted findings listing a change made after: the change
    # Findings opening now over narrower subjects (FindingDraft.covers): (fingerprint, theirs,
    # a list per subject covered of the fingerprints it may have had).
    wide: list[tuple[str, list[list[str]]]] = []
    narrower: dict[tuple[str, tuple[str, str, str, str]], str] = {}  # the pods share owners
    for draft in drafts:
        fingerprint = finding_fingerprint(cluster.name, draft)
        if fingerprint in affects:
            continue
        row = existing.get(fingerprint)
        if row is not None and (draft.check_id in unjudged or fingerprint in held):
            continue  # kept as it was: this run could not judge it
        if draft.covers and (row is None or row.status == Finding.Status.RESOLVED):
            covered = [
                [_covered_fingerprint(narrower, cluster.name, draft.check_id, s) for s in group]
                for group in draft.covers
            ]
            wide.append((fingerprint, covered))
        affects[fingerprint] = _tenant_links(draft, tenant_ids)
        check = CHECKS[draft.check_id]
        text, digest = evidence_text(draft.evidence)
        values = {
            "severity": draft.severity or check.severity,
            "title": stored_title(draft.title or check.title),
            "evidence": text,
            "evidence_digest": digest,
            "exposure": draft.exposure,
        }
        if row is None:
            to_create.append(_new_finding_row(cluster, draft, fingerprint, values))
            counts["opened"] += 1
            continue
        if row.status == Finding.Status.RESOLVED:
            back.append(row.pk)
        if row.acceptance_expired(now):
            expired.append(row.pk)
        newer = row.acceptance_outdated(draft, values["severity"], now)
        if newer is not None:
            outdated[row.pk] = newer
        if _refresh(row, values, now, counts, reopen=newer is not None):
            changed.append(row)
    for fingerprint, row in existing.items():
        if row.check_id in unjudged or fingerprint in held:
            continue
        if fingerprint not in affects and row.status in LIVE_STATUSES:
            resolved.append(row.pk)
            counts["resolved"] += 1
    # A risk accepted on narrower findings resolving now is carried to, or shown on, the
    # wider one opening over them (posture.acceptance_carry); read from the rows above.
    widenings = widenings_find(wide, existing, affects, now)
    first_seen = first_seen_carried(wide, existing, affects)
    # The audit keeps each expired or outdated acceptance as it stood (a few rows: whole).
    ended = Finding.objects.filter(pk__in=[*expired, *outdated])
    befores = {f.pk: (f, acceptance_state(f)) for f in ended}
    returning = returns_read(back)  # as they were when they resolved
    _findings_write(cluster, to_create, changed, resolved, now, unjudged, first_seen, held)
    ids = {fingerprint: row.pk for fingerprint, row in existing.items()}
    finding_tenants_write(cluster=cluster, affects=affects, existing=ids, now=now)
    returns_record(returning, now=now)
    acceptances_carry(widenings, now=now)
    for finding, before in befores.values():
        finding.refresh_from_db()
        _acceptance_ended_record(finding, before, outdated.get(finding.pk))
    return counts


def _covered_fingerprint(
    memo: dict[tuple[str, tuple[str, str, str, str]], str],
    cluster: str,
    check_id: str,
    subject: tuple[str, str, str, str],
) -> str:
    """subject_fingerprint, once per check and subject in a score: every pod of a workload
    covers its ReplicaSet and the owners above it (FindingDraft.covers)."""
    key = (check_id, subject)
    if key not in memo:
        memo[key] = subject_fingerprint(cluster, check_id, subject)
    return memo[key]


def _tenant_links(draft: FindingDraft, tenant_ids: dict[str, int]) -> dict[int, int | None]:
    """The tenants the draft affects (by id), each with its own exposure where that is not
    the finding's (null on its link, as a link of every other finding: nothing more stored)."""
    if not draft.tenant_exposures:
        return dict.fromkeys(tenant_ids[s] for s in draft.tenants if s in tenant_ids)
    own = draft.tenant_exposures
    return {
        tenant_ids[s]: own[s] if own.get(s, draft.exposure) != draft.exposure else None
        for s in draft.tenants
        if s in tenant_ids
    }


OUTDATED = "a change after the acceptance"  # why an outdated acceptance's finding reopened
# What the `outdated` event keeps of the change: a drift event's, or the bulletin exposure
# beyond the acceptance (posture.rules.stack.accepted.exposure_beyond).
DRIFT_CHANGE = ("drift_event", "detected_at", "change")
EXPOSURE_CHANGE = ("detected_at", "change", "new_cves", "fixes_raised", "severity")


def _acceptance_ended_record(finding: Finding, before: dict, change: dict | None) -> None:
    """The audit event of an acceptance this refresh ended: `expire` (past its date), or
    `outdated` with what it did not see (`change`): a drift change detected after it was
    made, or more bulletin exposure than it covered."""
    after = acceptance_state(finding)
    if change is None:
        audit_record(actor="system", action="expire", obj=finding, before=before, after=after)
        return
    beyond = "new_cves" in change
    after["reopened"] = BEYOND if beyond else OUTDATED
    after["change"] = {k: change.get(k) for k in (EXPOSURE_CHANGE if beyond else DRIFT_CHANGE)}
    after["accepted_at"] = finding.accepted_at.isoformat() if finding.accepted_at else None
    audit_record(actor="system", action="outdated", obj=finding, before=before, after=after)


def _refresh(
    row: Stored, values: dict[str, Any], now: datetime, counts: dict[str, int], reopen: bool
) -> bool:
    """Apply a draft's values to its stored finding; True when a stored field changed beyond
    last_seen (which every finding seen in this run gets). `reopen`: an accepted finding
    opens again whatever its state (its acceptance no longer covers its evidence)."""
    reopen = reopen or row.status == Finding.Status.RESOLVED or row.acceptance_expired(now)
    if reopen:
        row.status, row.resolved_at = Finding.Status.OPEN, None
        counts["reopened"] += 1
    else:
        counts["still_open"] += 1
    same = (
        row.severity == values["severity"]
        and row.title == values["title"]
        and row.exposure == values["exposure"]
        and row.evidence_digest == values["evidence_digest"]
    )
    if reopen or not same:
        for key, value in values.items():
            setattr(row, key, value)
    return reopen or not same


FINDING_COLUMNS = (
    "check_id",
    "cluster_id",
    "subject_kind",
    "subject_namespace",
    "subject_name",
    "key",
    "fingerprint",
    "severity",
    "title",
    "evidence",
    "evidence_digest",
    "exposure",
    "first_seen",
    "last_seen",
)
NEW_FINGERPRINT = FINDING_COLUMNS.index("fingerprint")  # in a row of _new_finding_row
REWRITTEN = (
    "severity",
    "title",
    "evidence",
    "evidence_digest",
    "exposure",
    "last_seen",
    "status",
    "resolved_at",
)


def _findings_write(
    cluster: Cluster,
    to_create: list[tuple[Any, ...]],
    changed: list[Stored],
    resolved: list[int],
    now: datetime,
    unjudged: Collection[str] = (),
    first_seen: dict[str, datetime] | None = None,
    held: Collection[str] = (),
) -> None:
    """Insert the new, rewrite the changed, resolve the gone; every other live finding of the
    cluster was seen again unchanged: one UPDATE moves their last_seen (not those of the
    checks this run could not judge: they were not seen). `first_seen`: by fingerprint, a new
    finding's that is not now (a widened subject's: acceptance_carry.first_seen_carried)."""
    stamp = db_datetime(now)  # first_seen and last_seen of the new ones
    earlier = {fp: db_datetime(when) for fp, when in (first_seen or {}).items()}
    new_rows = [(*row, earlier.get(row[NEW_FINGERPRINT], stamp), stamp) for row in to_create]
    rows_insert(Finding, FINDING_COLUMNS, new_rows, now)
    rows_update(Finding, REWRITTEN, [_update_row(row, stamp) for row in changed])
    for start in range(0, len(resolved), IDS_PER_QUERY):
        batch = resolved[start : start + IDS_PER_QUERY]
        Finding.objects.filter(pk__in=batch).update(status=Finding.Status.RESOLVED, resolved_at=now)
    live = Finding.objects.filter(cluster=cluster, status__in=LIVE_STATUSES, last_seen__lt=now)
    if unjudged:
        live = live.exclude(check_id__in=list(unjudged))
    if held:
        live = live.exclude(fingerprint__in=list(held))
    live.update(last_seen=now)


def _update_row(row: Stored, stamp: Any) -> tuple[Any, ...]:
    resolved_at = db_datetime(row.resolved_at) if row.resolved_at else None
    return (
        row.pk,
        row.severity,
        row.title,
        row.evidence,  # JSON text (evidence_text)
        row.evidence_digest,
        row.exposure,
        stamp,
        row.status,
        resolved_at,
    )


def _new_finding_row(
    cluster: Cluster, draft: FindingDraft, fingerprint: str, values: dict
) -> tuple[Any, ...]:
    """A new finding in FINDING_COLUMNS order, less first_seen and last_seen (the run's time)."""
    return (
        draft.check_id,
        cluster.pk,
        draft.subject_kind,
        draft.subject_namespace,
        draft.subject_name,
        draft.key[:200],
        fingerprint,
        values["severity"],
        values["title"],
        values["evidence"],  # JSON text (evidence_text)
        values["evidence_digest"],
        values["exposure"],
    )
