"""Posture writes: store what the checks found, resolve what they no longer find, score."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime, timedelta

from django.db import connection, models, transaction
from django.utils import timezone

from audit.services import Actor, audit_record
from gpuposture.base.rescore import rescore_request
from inventory.bulk import db_datetime, rows_insert
from inventory.models import Cluster, SyncRun
from inventory.snapshot import gc_paused
from posture import scoring
from posture.acceptance_carry import acceptance_state
from posture.action_store import ActionsRefresh, actions_refresh
from posture.bulletin_effects import bulletin_imports_effects_record
from posture.claims import claim_namespace
from posture.finding_store import LIVE_STATUSES, findings_refresh
from posture.inputs import PostureInputs
from posture.judged import CLAIM_CHECKS, checks_unjudged, claims_unjudged, through_claims
from posture.models import (
    Action,
    ActionTenant,
    ClusterScoreState,
    Finding,
    FindingTenant,
    PostureRun,
    TenantScore,
)
from posture.read_model import posture_inputs, tenant_infos
from posture.rules.registry import evaluate
from posture.rules.stack.accepted import exposure_basis
from tenants.mapping import UNCLASSIFIED
from tenants.models import Tenant
from tenants.services import unclassified_namespaces_set, unclassified_tenant_ensure


@transaction.atomic
def scores_compute(*, run: PostureRun, now: datetime) -> list[TenantScore]:
    """Score every tenant from the live findings that affect it, across all clusters (one
    read of the (tenant, finding) pairs), weighted by the tenant's trust class and by the
    tenant's own exposure where its link has one (FindingTenant.exposure)."""
    # Each live finding read once, then the (tenant, finding) pairs as ids only: a tenant's
    # items share the finding's ScoreItem (a join repeated every column for every tenant).
    # Unordered: `live` is only looked up (the model's ordering cost a sort before ANALYZE).
    findings = (
        Finding.objects.filter(status__in=LIVE_STATUSES)
        .order_by()
        .values_list("pk", "check_id", "severity", "status", "title", "exposure")
    )
    live = {row[0]: scoring.ScoreItem(*row) for row in findings.iterator(5000)}
    items: dict[int, list[scoring.ScoreItem]] = defaultdict(list)
    links = FindingTenant.objects.filter(finding__status__in=LIVE_STATUSES)
    pairs = links.values_list("tenant_id", "finding_id", "exposure").iterator(5000)
    for tenant_id, finding_id, exposure in pairs:
        item = live.get(finding_id)
        if item is None:  # live when the links were read, as when the findings were
            continue
        if exposure is not None and exposure != item.exposure:
            # What the cause spans of this tenant's (a binding's victim: its own namespaces),
            # not the whole finding's: its points, contribution and reason say that.
            item = item._replace(exposure=exposure)
        items[tenant_id].append(item)
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
                contributions=[
                    dict(zip(CONTRIBUTION_KEYS, c, strict=True)) for c in result.contributions
                ],
                open_by_severity=_open_by_severity(items[tenant_id]),
            )
        )
    _scores_write(scores, now=now)
    return scores


# A stored contribution's keys, in scoring.Contribution's field order: a contribution is a
# named tuple, zipped with these into the dict stored (60,000 of them at a tenth of the worst
# world: no function call each).
CONTRIBUTION_KEYS = ("finding_id", "check", "severity", "exposure", "points", "share", "reason")
# json.dumps's own text, from one encoder made once and without the circular-reference check
# (the rows are trees of plain values).
_JSON = json.JSONEncoder(check_circular=False).encode

# The columns a score row is written with; the rest take their defaults (the id).
SCORE_COLUMNS = (
    "run_id",
    "tenant_id",
    "computed_at",
    "risk",
    "score",
    "grade",
    "cap",
    "contributions",
    "open_by_severity",
)


def _scores_write(scores: list[TenantScore], *, now: datetime) -> None:
    """Insert the scores as plain rows (COPY on PostgreSQL): bulk_create quoted each tenant's
    contributions (thousands of entries at full size) into an UNNEST array in Python, 2.2 of
    2.8 s at a tenth of the worst world. The objects are returned as built, without ids."""
    rows = [
        (
            s.run_id,
            s.tenant_id,
            db_datetime(s.computed_at),
            s.risk,
            s.score,
            s.grade,
            s.cap,
            _JSON(s.contributions),
            _JSON(s.open_by_severity),
        )
        for s in scores
    ]
    rows_insert(TenantScore, SCORE_COLUMNS, rows, now)


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
            inputs = posture_inputs(cluster, tenants)
            evaluation = evaluate(inputs)
            # Checks that need a kind the last sync did not read keep their findings, as do
            # the findings that came through claims when it read no PersistentVolume.
            unread = inputs.kinds_unread
            counts = findings_refresh(
                cluster=cluster,
                drafts=evaluation.drafts,
                now=now,
                unjudged=checks_unjudged(unread),
                held=_claim_findings_held(cluster, unread, inputs),
            )
        for draft, _exemption in evaluation.exempted:
            exempted[draft.check_id] += 1
        for key, value in counts.items():
            totals[key] += value
        evaluated.append(cluster.name)
    # The findings and their links are final: their statistics first, so that the scores' and
    # the actions' reads of them are planned from their real sizes too (a first score's read
    # of the open findings by id: 0.65 s without, 0.29 s with, at 26,000 findings on SQLite).
    statistics_refresh(totals, tables=FINDING_TABLES)
    unclassified_namespaces_set(unclaimed_namespaces())
    with gc_paused():  # the scores and the actions' groups: many objects, no cycles
        # No cluster ever read: no finding could exist, so a score would be 100/A for knowing
        # nothing. The tenants stay unscored (null, with why: posture.selectors).
        read = bool(evaluated) or SyncRun.objects.filter(status=SyncRun.Status.SUCCEEDED).exists()
        scores = scores_compute(run=run, now=now) if read else []
        actions = _actions_refresh(now=now, run=run)
    if clusters is None:
        # Every cluster was judged: bulletin imports waiting to know what they resolved learn it.
        bulletin_imports_effects_record(run=run)
    statistics_refresh(totals, tables=RESULT_TABLES)
    run.clusters = evaluated
    run.counts = {
        **totals,
        "tenants_scored": len(scores),
        "actions": actions.count,
        "actions_regrouped": actions.rebuilt,
        "exempted": dict(exempted),
    }
    run.actions_digest = actions.digest
    run.finished_at = timezone.now()
    run.save(update_fields=["clusters", "counts", "actions_digest", "finished_at"])
    cluster_scored_stamp(cluster_ids=[c.pk for c in targets], at=run.finished_at)
    return run


def _claim_findings_held(
    cluster: Cluster, unread: Iterable[str], inputs: PostureInputs
) -> set[str]:
    """Fingerprints of the cluster's live POD-003 / POD-005 findings that came through a claim,
    when the last sync read no PersistentVolume: not judged by it (posture.judged). Their own
    hostPath volumes were judged, so those findings are refreshed or resolved as ever. Only
    those whose workload is still in `inputs`: a workload gone has no pod for a claim to hand
    a path to, whatever the PersistentVolumes say, so its finding resolves. Every pod is walked
    only on such a run, never on a score that read its PersistentVolumes."""
    checks = [c for c in CLAIM_CHECKS if claims_unjudged(c, unread)]
    if not checks:
        return set()
    present = _workloads_present(inputs)
    rows = Finding.objects.filter(cluster=cluster, check_id__in=checks, status__in=LIVE_STATUSES)
    fields = ("fingerprint", "evidence", "subject_kind", "subject_namespace", "subject_name")
    return {
        fingerprint
        for fingerprint, evidence, *subject in rows.values_list(*fields).iterator(2000)
        if through_claims(evidence) and tuple(subject) in present
    }


def _workloads_present(inputs: PostureInputs) -> set[tuple[str, str, str]]:
    """(kind, namespace, name) of every workload the snapshot holds a pod or template of, and
    of every pod itself (a finding on one pod: a debug container's)."""
    pods = [*inputs.snapshot.pods, *(pod for pod, _ in inputs.template_pods)]
    present: set[tuple[str, str, str]] = set()
    for pod in pods:
        workload = inputs.workload_of(pod)
        present.add((workload.kind, workload.namespace, workload.name))
        present.add(("Pod", pod.namespace, pod.name))
    return present


def unclaimed_namespaces() -> list[str]:
    """The namespaces nobody claims that the live findings of the unclassified party name as
    theirs (posture.claims, as the claim actions group them), sorted: what the system tenant
    lists as its namespaces. One query: the findings whose only tenant is the system one (of
    the evidence, only the two keys posture.claims reads)."""
    links = FindingTenant.objects.order_by().values("finding_id")
    alone = (
        Finding.objects.filter(status__in=LIVE_STATUSES)
        .filter(pk__in=links.filter(tenant__is_system=True))
        .exclude(pk__in=links.filter(tenant__is_system=False))
        .order_by()
        .values_list(
            "subject_kind",
            "subject_namespace",
            "subject_name",
            "evidence__principal_namespace",
            "evidence__workload",
        )
        .distinct()
    )
    found = set()
    for kind, namespace, name, principal, workload in alone.iterator(2000):
        evidence = {"principal_namespace": principal, "workload": workload}
        found.add(claim_namespace((UNCLASSIFIED,), kind, namespace, name, evidence))
    found.discard("")
    return sorted(found)


def _actions_refresh(*, now: datetime, run: PostureRun) -> ActionsRefresh:
    """Fix-first, ranked from the same risk points; regrouped only when what they are grouped
    from changed since the last run that stored them."""
    last = (
        PostureRun.objects.exclude(pk=run.pk)
        .exclude(actions_digest="")
        .order_by("-id")
        .values_list("actions_digest", "counts")
        .first()
    )
    previous, previous_counts = last or ("", {})
    return actions_refresh(
        now=now, previous=previous, previous_count=(previous_counts or {}).get("actions", -1)
    )


# Tables a score rewrites in bulk, whose planner statistics the pages' plans depend on: the
# findings' (final once the checks' findings are stored), then the results computed from them.
FINDING_TABLES = (Finding, FindingTenant)
RESULT_TABLES = (Action, ActionTenant, TenantScore)
SCORED_TABLES = (*FINDING_TABLES, *RESULT_TABLES)


def statistics_refresh(
    totals: dict[str, int], *, tables: tuple[type[models.Model], ...] = SCORED_TABLES
) -> None:
    """ANALYZE the scored tables when this score changed a tenth of the findings or more (a
    first score, a new cluster).

    PostgreSQL: autovacuum would, but up to minutes later; meanwhile the planner costed a
    tenant's page from an empty table's statistics and scanned every live finding for it
    (2.5 s instead of 0.3 s at 344,000 findings). SQLite never gathers statistics itself, and
    without them it reads each link's finding from the table rather than from the index
    finding_status_severity (the overview's counts: 1.0 s instead of 0.3 s)."""
    changed = sum(totals.get(k, 0) for k in ("opened", "reopened", "resolved"))
    live = sum(totals.get(k, 0) for k in ("opened", "reopened", "still_open"))
    if connection.vendor not in ("postgresql", "sqlite") or changed * 10 < max(live, 1):
        return
    names = [connection.ops.quote_name(m._meta.db_table) for m in tables]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(f"ANALYZE {', '.join(names)}")  # noqa: S608 (the models' own tables)
        else:  # SQLite analyses one table (or the whole database) per statement
            for table in names:
                cursor.execute(f"ANALYZE {table}")  # noqa: S608 (a model's own table)


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
def finding_accept(*, finding: Finding, user, reason: str, until: datetime) -> Finding:
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
    finding.accepted_at = now
    # A bulletin exposure finding: what is accepted is the exposures seen now, not a later
    # bulletin's (posture.rules.stack.accepted); null for other checks.
    finding.accepted_basis = exposure_basis(finding.check_id, finding.evidence, finding.severity)
    fields = ["status", "accepted_by", "accepted_reason", "accepted_until", "accepted_at"]
    finding.save(update_fields=[*fields, "accepted_basis"])
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
