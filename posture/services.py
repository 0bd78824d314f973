"""Posture writes: store what the checks found, resolve what they no longer find, score."""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from audit.services import Actor, audit_record
from gpuposture.base.rescore import rescore_request
from inventory.bulk import db_datetime, rows_insert, rows_update
from inventory.models import Cluster, SyncRun
from inventory.snapshot import gc_paused
from posture import scoring
from posture.action_store import actions_refresh
from posture.bulletin_effects import bulletin_imports_effects_record
from posture.finding_links import finding_tenants_write
from posture.models import ClusterScoreState, Finding, FindingTenant, PostureRun, TenantScore
from posture.rules import CHECKS, FindingDraft
from posture.rules.registry import evaluate
from posture.selectors import posture_inputs, tenant_infos
from tenants.models import Tenant
from tenants.services import unclassified_tenant_ensure

LIVE_STATUSES = (Finding.Status.OPEN, Finding.Status.ACCEPTED)


def finding_fingerprint(cluster: str, draft: FindingDraft) -> str:
    """sha256 of the cause's identity: check, cluster, subject and key, no tenant (DESIGN §5).
    Migration posture.0005 holds a frozen copy: keep the two equal."""
    identity = "|".join(
        (draft.check_id, cluster, draft.subject_kind, draft.subject_namespace,
         draft.subject_name, draft.key)
    )  # fmt: skip
    return hashlib.sha256(identity.encode()).hexdigest()


@transaction.atomic
def findings_refresh(
    *, cluster: Cluster, drafts: Iterable[FindingDraft], now: datetime
) -> dict[str, int]:
    """Upsert the drafts as findings of this cluster (no duplicates across runs), set the
    tenants each affects, and resolve the cluster's live findings that no check reported this
    time. Only findings whose stored fields change are rewritten; the others get their
    last_seen moved in a few UPDATEs; tenant links are inserted and deleted in bulk."""
    tenant_ids = dict(Tenant.objects.values_list("slug", "pk"))
    # Stored evidence is compared by its digest, never decoded: on a large world reading it
    # back was most of the findings refresh.
    stored = Finding.objects.filter(cluster=cluster).defer("evidence")
    existing = {f.fingerprint: f for f in stored.iterator(2000)}
    counts = {"opened": 0, "reopened": 0, "still_open": 0, "resolved": 0}
    to_create: list[tuple[Any, ...]] = []
    changed: list[Finding] = []
    resolved: list[int] = []
    affects: dict[str, set[int]] = {}  # fingerprint -> the tenants it affects now
    expired: list[tuple[Finding, dict[str, Any]]] = []  # risk acceptances past their date
    for draft in drafts:
        fingerprint = finding_fingerprint(cluster.name, draft)
        if fingerprint in affects:
            continue
        affects[fingerprint] = {tenant_ids[s] for s in draft.tenants if s in tenant_ids}
        check = CHECKS[draft.check_id]
        values = {
            "severity": draft.severity or check.severity,
            "title": (draft.title or check.title)[:300],
            "evidence": draft.evidence,
            "evidence_digest": evidence_digest(draft.evidence),
            "exposure": draft.exposure,
        }
        row = existing.get(fingerprint)
        if row is None:
            to_create.append(_new_finding_row(cluster, draft, fingerprint, values))
            counts["opened"] += 1
        else:
            if _acceptance_expired(row, now):
                expired.append((row, acceptance_state(row)))
            if _refresh(row, values, now, counts):
                changed.append(row)
    for fingerprint, row in existing.items():
        if fingerprint not in affects and row.status in LIVE_STATUSES:
            row.status, row.resolved_at = Finding.Status.RESOLVED, now
            resolved.append(row.pk)
            counts["resolved"] += 1
    _findings_write(cluster, to_create, changed, resolved, now)
    finding_tenants_write(cluster=cluster, affects=affects, existing=existing, now=now)
    for row, before in expired:
        after = acceptance_state(row)
        audit_record(actor="system", action="expire", obj=row, before=before, after=after)
    return counts


def _refresh(row: Finding, values: dict[str, Any], now: datetime, counts: dict[str, int]) -> bool:
    """Apply a draft's values to its existing finding; True when a stored field changed
    beyond last_seen (which every finding seen in this run gets)."""
    reopen = row.status == Finding.Status.RESOLVED or _acceptance_expired(row, now)
    if reopen:
        row.status, row.resolved_at = Finding.Status.OPEN, None
        counts["reopened"] += 1
    else:
        counts["still_open"] += 1
    # Evidence is compared by digest (canonical JSON: a tuple and a list, or two key orders,
    # are the same evidence, as they read back once stored).
    same = (
        row.severity == values["severity"]
        and row.title == values["title"]
        and row.exposure == values["exposure"]
        and row.evidence_digest == values["evidence_digest"]
    )
    if reopen or not same:
        for key, value in values.items():
            setattr(row, key, value)
    row.last_seen = now
    return reopen or not same


def evidence_digest(evidence: Any) -> str:
    """sha256 of the evidence as canonical JSON (Finding.evidence_digest)."""
    try:
        text = json.dumps(evidence, sort_keys=True)
    except TypeError:  # keys of mixed types cannot be sorted; the draft's own order then
        text = json.dumps(evidence)
    return hashlib.sha256(text.encode()).hexdigest()


FINDING_COLUMNS = (
    "check_id", "cluster_id", "subject_kind", "subject_namespace", "subject_name", "key",
    "fingerprint", "severity", "title", "evidence", "evidence_digest", "exposure", "first_seen",
    "last_seen",
)  # fmt: skip
REWRITTEN = (
    "severity", "title", "evidence", "evidence_digest", "exposure", "last_seen", "status",
    "resolved_at",
)  # fmt: skip
BATCH = 900  # ids per UPDATE, under SQLite's limit on query parameters


def _findings_write(
    cluster: Cluster,
    to_create: list[tuple[Any, ...]],
    changed: list[Finding],
    resolved: list[int],
    now: datetime,
) -> None:
    """Insert the new, rewrite the changed, resolve the gone; every other live finding of the
    cluster was seen again unchanged: one UPDATE moves their last_seen."""
    stamp = db_datetime(now)  # first_seen and last_seen of the new ones
    rows_insert(Finding, FINDING_COLUMNS, [(*row, stamp, stamp) for row in to_create], now)
    rows_update(Finding, REWRITTEN, [_update_row(row) for row in changed])
    for start in range(0, len(resolved), BATCH):
        batch = resolved[start : start + BATCH]
        Finding.objects.filter(pk__in=batch).update(status=Finding.Status.RESOLVED, resolved_at=now)
    live = Finding.objects.filter(cluster=cluster, status__in=LIVE_STATUSES, last_seen__lt=now)
    live.update(last_seen=now)


def _update_row(row: Finding) -> tuple[Any, ...]:
    resolved_at = db_datetime(row.resolved_at) if row.resolved_at else None
    return (
        row.pk, row.severity, row.title, json.dumps(row.evidence), row.evidence_digest,
        row.exposure, db_datetime(row.last_seen), row.status, resolved_at,
    )  # fmt: skip


def _new_finding_row(
    cluster: Cluster, draft: FindingDraft, fingerprint: str, values: dict
) -> tuple[Any, ...]:
    """A new finding in FINDING_COLUMNS order, less first_seen and last_seen (the run's time)."""
    return (
        draft.check_id, cluster.pk, draft.subject_kind, draft.subject_namespace,
        draft.subject_name, draft.key[:200], fingerprint, values["severity"], values["title"],
        json.dumps(values["evidence"]), values["evidence_digest"], values["exposure"],
    )  # fmt: skip


def _acceptance_expired(finding: Finding, now: datetime) -> bool:
    return (
        finding.status == Finding.Status.ACCEPTED
        and finding.accepted_until is not None
        and finding.accepted_until <= now
    )


@transaction.atomic
def scores_compute(*, run: PostureRun, now: datetime) -> list[TenantScore]:
    """Score every tenant from the live findings that affect it, across all clusters (one
    read of the (tenant, finding) pairs), weighted by the tenant's trust class."""
    items: dict[int, list[scoring.ScoreItem]] = defaultdict(list)
    live = FindingTenant.objects.filter(finding__status__in=LIVE_STATUSES).values_list(
        "tenant_id", "finding_id", "finding__check_id", "finding__severity",
        "finding__status", "finding__title", "finding__exposure",
    )  # fmt: skip
    for tenant_id, pk, check_id, severity, status, title, exposure in live.iterator(5000):
        items[tenant_id].append(scoring.ScoreItem(pk, check_id, severity, status, title, exposure))
    scores = []
    weights = Tenant.objects.values_list("pk", "trust_class__risk_weight", "is_system")
    # The system tenant `unclassified` is scored only while unclaimed namespaces give it
    # findings, and once more after, so its last score says they are gone.
    scored_before = set(
        TenantScore.objects.filter(tenant__is_system=True).values_list("tenant_id", flat=True)
    )
    for tenant_id, class_weight, is_system in weights:
        if is_system and not items[tenant_id] and tenant_id not in scored_before:
            continue
        result = scoring.score_findings(items[tenant_id], class_weight=class_weight)
        scores.append(
            TenantScore(
                run=run,
                tenant_id=tenant_id,
                computed_at=now,
                risk=result.risk,
                score=result.score,
                grade=result.grade,
                cap=result.cap or "",
                contributions=[_contribution_dict(c) for c in result.contributions],
                open_by_severity=_open_by_severity(items[tenant_id]),
            )
        )
    return TenantScore.objects.bulk_create(scores)


def _contribution_dict(c: scoring.Contribution) -> dict[str, object]:
    return {
        "finding_id": c.finding_id, "check": c.check_id, "severity": c.severity,
        "exposure": c.exposure, "points": c.points, "share": c.share, "reason": c.reason,
    }  # fmt: skip


def _open_by_severity(items: list[scoring.ScoreItem]) -> dict[str, int]:
    counts = {"critical": 0, "high": 0, "medium": 0, "low": 0}
    for item in items:
        if item.status == Finding.Status.OPEN:
            counts[item.severity] += 1
    return counts


def posture_evaluate(*, clusters: Iterable[Cluster] | None = None) -> PostureRun:
    """Run the checks over each cluster's last good inventory, then score every tenant."""
    now = timezone.now()
    run = PostureRun.objects.create()
    targets = list(clusters) if clusters is not None else list(Cluster.objects.all())
    # Findings on namespaces nobody claims affect the system tenant: it must exist to be linked.
    unclassified_tenant_ensure()
    tenants = tenant_infos()
    totals: dict[str, int] = defaultdict(int)
    exempted: dict[str, int] = defaultdict(int)
    evaluated = []
    for cluster in targets:
        if not cluster.sync_runs.filter(status=SyncRun.Status.SUCCEEDED).exists():
            continue  # nothing read yet: no inventory to judge
        with gc_paused():  # the read model and the drafts: many objects, no cycles
            evaluation = evaluate(posture_inputs(cluster, tenants))
            counts = findings_refresh(cluster=cluster, drafts=evaluation.drafts, now=now)
        for draft, _exemption in evaluation.exempted:
            exempted[draft.check_id] += 1
        for key, value in counts.items():
            totals[key] += value
        evaluated.append(cluster.name)
    scores = scores_compute(run=run, now=now)
    # Fix-first, ranked from the same risk points; regrouped only when what they are grouped
    # from changed since the last run that stored them.
    last = (
        PostureRun.objects.exclude(pk=run.pk).exclude(actions_digest="")
        .order_by("-id").values_list("actions_digest", "counts").first()
    )  # fmt: skip
    previous, previous_counts = last or ("", {})
    actions = actions_refresh(
        now=now, previous=previous, previous_count=(previous_counts or {}).get("actions", -1)
    )
    if clusters is None:
        # Every cluster was judged: bulletin imports waiting to know what they resolved learn it.
        bulletin_imports_effects_record(run=run)
    run.clusters = evaluated
    run.counts = {
        **totals, "tenants_scored": len(scores), "actions": actions.count,
        "actions_regrouped": actions.rebuilt, "exempted": dict(exempted),
    }  # fmt: skip
    run.actions_digest = actions.digest
    run.finished_at = timezone.now()
    run.save(update_fields=["clusters", "counts", "actions_digest", "finished_at"])
    cluster_scored_stamp(cluster_ids=[c.pk for c in targets], at=run.finished_at)
    return run


def cluster_scored_stamp(*, cluster_ids: list[int], at: datetime) -> None:
    """Record when each cluster asked for was scored, judged or not (one with no good sync
    has nothing to judge): the pages show it, and the expiry sweep does not ask again for an
    expiry this score has seen."""
    ClusterScoreState.objects.bulk_create(
        [ClusterScoreState(cluster_id=pk, last_scored_at=at) for pk in cluster_ids],
        update_conflicts=True,
        unique_fields=["cluster"],
        update_fields=["last_scored_at"],
    )


MAX_ACCEPTANCE_DAYS = 365


class AcceptanceError(ValueError):
    """A risk acceptance that cannot be recorded; the message says why."""


@transaction.atomic
def finding_accept(*, finding: Finding, user, reason: str, until: datetime) -> Finding:  # type: ignore[no-untyped-def]
    """Accept the risk of a live finding until a date, with a reason. It no longer counts in
    the score; when the date passes, the next evaluation opens it again."""
    reason = (reason or "").strip()
    now = timezone.now()
    if finding.status == Finding.Status.RESOLVED:
        raise AcceptanceError("this finding is resolved: there is no risk left to accept")
    if not 10 <= len(reason) <= 2000:
        raise AcceptanceError("give a reason of 10 to 2000 characters")
    if not now < until <= now + timedelta(days=MAX_ACCEPTANCE_DAYS):
        raise AcceptanceError(f"the expiry must be in the next {MAX_ACCEPTANCE_DAYS} days")
    before = acceptance_state(finding)
    finding.status = Finding.Status.ACCEPTED
    finding.accepted_by, finding.accepted_reason, finding.accepted_until = user, reason, until
    finding.save(update_fields=["status", "accepted_by", "accepted_reason", "accepted_until"])
    audit_record(
        actor=user, action="accept", obj=finding, before=before, after=acceptance_state(finding)
    )
    rescore_request(clusters=[finding.cluster_id], reason="acceptance")
    return finding


@transaction.atomic
def finding_reopen(*, finding: Finding, user: Actor = None) -> Finding:
    """Withdraw a risk acceptance (an audit event by `user`)."""
    if finding.status == Finding.Status.ACCEPTED:
        before = acceptance_state(finding)
        finding.status = Finding.Status.OPEN
        finding.accepted_until = None
        finding.save(update_fields=["status", "accepted_until"])
        audit_record(
            actor=user, action="reopen", obj=finding, before=before, after=acceptance_state(finding)
        )
        rescore_request(clusters=[finding.cluster_id], reason="acceptance")
    return finding


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
