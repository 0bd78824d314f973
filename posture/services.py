"""Posture writes: store what the checks found, resolve what they no longer find, score."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from inventory.models import Cluster, SyncRun
from posture import scoring
from posture.models import Finding, PostureRun, TenantScore
from posture.rules import CHECKS, FindingDraft, run_checks
from posture.selectors import posture_inputs, tenant_infos
from tenants.models import Tenant

LIVE_STATUSES = (Finding.Status.OPEN, Finding.Status.ACCEPTED)


def finding_fingerprint(cluster: str, draft: FindingDraft) -> str:
    identity = "|".join(
        (draft.check_id, cluster, draft.tenant or "", draft.subject_kind,
         draft.subject_namespace, draft.subject_name, draft.key)
    )  # fmt: skip
    return hashlib.sha256(identity.encode()).hexdigest()


@transaction.atomic
def findings_refresh(
    *, cluster: Cluster, drafts: Iterable[FindingDraft], now: datetime
) -> dict[str, int]:
    """Upsert the drafts as findings of this cluster (no duplicates across runs) and resolve
    the cluster's live findings that no check reported this time."""
    tenant_ids = dict(Tenant.objects.values_list("slug", "pk"))
    existing = {f.fingerprint: f for f in Finding.objects.filter(cluster=cluster)}
    counts = {"opened": 0, "reopened": 0, "still_open": 0, "resolved": 0}
    to_create: list[Finding] = []
    to_update: list[Finding] = []
    seen: set[str] = set()
    for draft in drafts:
        fingerprint = finding_fingerprint(cluster.name, draft)
        if fingerprint in seen:
            continue
        seen.add(fingerprint)
        check = CHECKS[draft.check_id]
        values = {
            "severity": draft.severity or check.severity,
            "title": (draft.title or check.title)[:300],
            "evidence": draft.evidence,
            "last_seen": now,
        }
        row = existing.get(fingerprint)
        if row is None:
            to_create.append(_new_finding(cluster, draft, fingerprint, tenant_ids, values, now))
            counts["opened"] += 1
            continue
        if row.status == Finding.Status.RESOLVED or _acceptance_expired(row, now):
            row.status, row.resolved_at = Finding.Status.OPEN, None
            counts["reopened"] += 1
        else:
            counts["still_open"] += 1
        for key, value in values.items():
            setattr(row, key, value)
        to_update.append(row)
    for fingerprint, row in existing.items():
        if fingerprint not in seen and row.status in LIVE_STATUSES:
            row.status, row.resolved_at = Finding.Status.RESOLVED, now
            to_update.append(row)
            counts["resolved"] += 1
    Finding.objects.bulk_create(to_create, batch_size=500)
    Finding.objects.bulk_update(
        to_update,
        ["severity", "title", "evidence", "last_seen", "status", "resolved_at"],
        batch_size=500,
    )
    return counts


def _new_finding(cluster, draft, fingerprint, tenant_ids, values, now) -> Finding:  # type: ignore[no-untyped-def]
    return Finding(
        check_id=draft.check_id,
        cluster=cluster,
        tenant_id=tenant_ids.get(draft.tenant) if draft.tenant else None,
        subject_kind=draft.subject_kind,
        subject_namespace=draft.subject_namespace,
        subject_name=draft.subject_name,
        key=draft.key[:200],
        fingerprint=fingerprint,
        first_seen=now,
        **values,
    )


def _acceptance_expired(finding: Finding, now: datetime) -> bool:
    return (
        finding.status == Finding.Status.ACCEPTED
        and finding.accepted_until is not None
        and finding.accepted_until <= now
    )


@transaction.atomic
def scores_compute(*, run: PostureRun, now: datetime) -> list[TenantScore]:
    """Score every tenant from its live findings, across all clusters."""
    items: dict[int, list[scoring.ScoreItem]] = defaultdict(list)
    live = Finding.objects.filter(status__in=LIVE_STATUSES, tenant__isnull=False)
    for pk, tenant_id, check_id, severity, status, title in live.values_list(
        "pk", "tenant_id", "check_id", "severity", "status", "title"
    ):
        items[tenant_id].append(scoring.ScoreItem(pk, check_id, severity, status, title))
    scores = []
    for tenant_id in Tenant.objects.values_list("pk", flat=True):
        result = scoring.score_findings(items[tenant_id])
        scores.append(
            TenantScore(
                run=run,
                tenant_id=tenant_id,
                computed_at=now,
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
        "points": c.points, "reason": c.reason,
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
    tenants = tenant_infos()
    totals: dict[str, int] = defaultdict(int)
    evaluated = []
    for cluster in targets:
        if not cluster.sync_runs.filter(status=SyncRun.Status.SUCCEEDED).exists():
            continue  # nothing read yet: no inventory to judge
        drafts = run_checks(posture_inputs(cluster, tenants))
        for key, value in findings_refresh(cluster=cluster, drafts=drafts, now=now).items():
            totals[key] += value
        evaluated.append(cluster.name)
    scores = scores_compute(run=run, now=now)
    run.clusters = evaluated
    run.counts = {**totals, "tenants_scored": len(scores)}
    run.finished_at = timezone.now()
    run.save(update_fields=["clusters", "counts", "finished_at"])
    return run
