"""Reads for the pages and the API: scores and their trends, the tenants ranked, a tenant's
posture, the fix-first actions, a cluster's checklist facts, each scoped to what the reader
may see. The checks' read model (PostureInputs from the database) is posture.read_model."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta

from django.conf import settings
from django.db.models import Count, F, Max, Min, OuterRef, Q, QuerySet, Subquery
from django.utils import timezone

from gpuposture.base.enums import FindingStatus, Severity
from gpuposture.base.finding_status import effective_status_expr, status_q
from gpuposture.base.roles import reads_all_posture
from inventory.holding_models import SyncHandover
from inventory.models import Bulletin, Cluster, Node, SyncRun
from inventory.selectors import cluster_kinds_unread, last_full_read
from posture import scoring
from posture.action_store import with_own_risk
from posture.checklist import ChecklistFacts
from posture.judged import checks_unjudged, unjudged_note
from posture.models import SEVERITY_ORDER, Action, Finding, FindingTenant, TenantScore
from posture.observed import observed_expression, tenant_observed
from posture.rules import CHECKS
from telemetry.models import GpuReading, ResetAttestation
from tenants.models import SharingRequest, Tenant, TrustClass
from tenants.redaction import HiddenScope, visible_tenants


def sharing_requests_current(tenant: Tenant) -> list[SharingRequest]:
    """The tenant's pending and approved (possibly expired) requests, newest first."""
    return list(
        SharingRequest.objects.filter(
            tenant=tenant,
            status__in=[SharingRequest.Status.PENDING, SharingRequest.Status.APPROVED],
        ).select_related("cluster", "tenant__trust_class")[:50]
    )


def latest_scores() -> QuerySet[TenantScore]:
    """Each tenant's most recent score (one query)."""
    newest = TenantScore.objects.filter(tenant=OuterRef("tenant")).order_by("-computed_at", "-id")
    return TenantScore.objects.filter(pk=Subquery(newest.values("pk")[:1]))


def with_latest_score(tenants: QuerySet[Tenant]) -> QuerySet[Tenant]:
    """Tenants annotated with their latest latest_risk, latest_score and latest_grade (no
    extra query: subqueries of the same SELECT)."""
    newest = TenantScore.objects.filter(tenant=OuterRef("pk")).order_by("-computed_at", "-id")
    return tenants.annotate(
        latest_risk=Subquery(newest.values("risk")[:1]),
        latest_score=Subquery(newest.values("score")[:1]),
        latest_grade=Subquery(newest.values("grade")[:1]),
    )


# Why a tenant has no score (risk, score and grade are then null, never 0 / 100 / A): the
# code the API gives as `not_scored_reason`, and the words the pages show.
NOT_SCORED_REASONS = {
    "no_successful_sync": "no cluster has been synced successfully yet, so nothing was read "
    "to score",
    "not_scored_yet": "no score run has scored this tenant yet",
}


def not_scored_reason() -> str:
    """Why an unscored tenant has no score (one query). A score run stores no scores until a
    cluster has been read (posture.services.posture_evaluate); after that, a tenant without
    one was declared since the last run."""
    read = SyncRun.objects.filter(status=SyncRun.Status.SUCCEEDED).exists()
    return "not_scored_yet" if read else "no_successful_sync"


def not_scored_words(rows: Iterable) -> str:
    """The pages' note on rows not scored (their `risk` None): why, in words; "" when every
    row is scored (then no query)."""
    if all(r.risk is not None for r in rows):
        return ""
    return NOT_SCORED_REASONS[not_scored_reason()]


TREND_DAYS = 30
FIX_FIRST = 10


def risk_series(
    user, days: int = TREND_DAYS, tenant_slugs=None
) -> dict[str, list[tuple[str, float]]]:
    """tenant slug -> [(time, risk points)] over the last `days`, for the tenants the user may
    see (of `tenant_slugs` when given; one query)."""
    since = timezone.now() - timedelta(days=days)
    tenants = Tenant.objects.visible_to(user)
    if tenant_slugs is not None:
        tenants = tenants.filter(slug__in=tenant_slugs)
    rows = (
        TenantScore.objects.filter(tenant__in=tenants, computed_at__gte=since)
        .order_by("computed_at", "id")
        .values_list("tenant__slug", "computed_at", "risk")
    )
    series: dict[str, list[tuple[str, float]]] = {}
    for slug, at, risk in rows:
        series.setdefault(slug, []).append((at.isoformat(), risk))
    return series


def top_actions(user, limit: int = FIX_FIRST) -> list[Action]:
    """The fix-first actions the user may see, most risk removed first (two queries: the
    actions with their cluster, and the tenants they help)."""
    actions = (
        Action.objects.visible_to(user)
        .select_related("cluster")
        .prefetch_related("tenants")
        .order_by("-risk_removed", "key")
    )
    return list(with_own_risk(actions, user)[:limit])  # a tenant viewer's: by their own risk


def with_tenant_slugs(findings: Iterable[Finding], scope: HiddenScope | None) -> list[Finding]:
    """Set `tenant_slugs` on each finding, or action (tenants prefetched): the tenants it
    affects that the viewer may see, by slug; a tenant viewer never learns the others' names."""
    found = list(findings)
    for finding in found:
        slugs = (t.slug for t in finding.tenants.all())
        finding.tenant_slugs = visible_tenants(scope, slugs)
    return found


OPEN_SEVERITIES = Severity.values()


def tenants_ranked(user) -> QuerySet[Tenant]:
    """Tenants the user may see, most risk first, each with its latest score (latest_risk,
    latest_score, latest_grade, latest_cap), the risk of the run before it (previous_risk) and
    whether anything of it was seen on a cluster read (observed, posture.observed)."""
    newest = TenantScore.objects.filter(tenant=OuterRef("pk")).order_by("-computed_at", "-id")
    return (
        Tenant.objects.visible_to(user)
        .select_related("trust_class")
        .annotate(
            latest_risk=Subquery(newest.values("risk")[:1]),
            latest_score=Subquery(newest.values("score")[:1]),
            latest_grade=Subquery(newest.values("grade")[:1]),
            latest_cap=Subquery(newest.values("cap")[:1]),
            previous_risk=Subquery(newest.values("risk")[1:2]),
            observed=observed_expression(),
        )
        # Unclassified is a row only while unclaimed namespaces hold something to judge.
        .exclude(is_system=True, latest_risk__isnull=True)
        .exclude(is_system=True, latest_risk=0)
        # Most risk first: different findings never tie; unscored tenants after the scored
        # ones (their risk is unknown, not low: their rows say "not scored" and why).
        .order_by(F("latest_risk").desc(nulls_last=True), "slug")
    )


def tenants_overview(user) -> list[Tenant]:
    """tenants_ranked, each with its open findings counted per severity (open_critical, ...):
    two queries whatever the number of tenants.

    The counts are a query of their own, grouped by tenant over the finding links. Counted in
    the tenants' query (a join grouped by every tenant and class column) PostgreSQL guessed a
    hundred times the groups there are and spent 2 s JIT-compiling a 0.3 s query."""
    tenants = list(tenants_ranked(user))
    is_open = status_q(Finding.Status.OPEN, timezone.now(), prefix="finding__")
    counted = (
        FindingTenant.objects.filter(is_open, tenant__in=Tenant.objects.visible_to(user))
        .values("tenant_id")
        .annotate(**{sev: Count("pk", filter=Q(finding__severity=sev)) for sev in OPEN_SEVERITIES})
        .order_by()
    )
    by_tenant = {row["tenant_id"]: row for row in counted}
    for tenant in tenants:
        row = by_tenant.get(tenant.pk, {})
        for sev in OPEN_SEVERITIES:
            setattr(tenant, f"open_{sev}", row.get(sev, 0))
    return tenants


def tenant_posture(tenant: Tenant, *, with_findings: bool = True) -> dict:
    """A tenant's latest score with its contributions, and the live findings that affect it
    (all of them: the API's posture; the page reads them grouped and bounded instead, see
    posture.tenant_findings, and passes `with_findings=False`)."""
    score = TenantScore.objects.filter(tenant=tenant).order_by("-computed_at", "-id").first()
    findings = _live_findings_sorted(tenant) if with_findings else []
    return {
        "tenant": tenant.slug,
        "trust_class": tenant.trust_class.slug,
        "risk": score.risk if score else None,
        "score": score.score if score else None,
        "grade": score.grade if score else None,
        "cap": score.cap if score else "",
        "computed_at": score.computed_at if score else None,
        "scored": score is not None,
        "observed": tenant_observed(tenant),
        "contributions": score.contributions if score else [],
        "k": scoring.K,
        "findings": findings,
        "not_scored_reason": None if score else not_scored_reason(),
    }


def _live_findings_sorted(tenant: Tenant) -> list[Finding]:
    findings = (
        Finding.objects.affecting(tenant=tenant)
        .filter(status__in=[FindingStatus.OPEN, FindingStatus.ACCEPTED])
        .select_related("cluster", "owner")  # the owner: a field of each serialized row
        # The links: each tenant's own exposure, where it has one, for each row's `risk`.
        .prefetch_related("tenants__trust_class", "tenant_links")
        .order_by("check_id", "id")
    )
    # Open before accepted (a lapsed acceptance is open), worst severity first (a stable sort
    # keeps check id order).
    return sorted(
        findings, key=lambda f: (f.effective_status != "open", SEVERITY_ORDER[f.severity])
    )


def checklist_facts(cluster: Cluster, user) -> ChecklistFacts:
    """What the checklist judges, counted over what `user` may see: the whole cluster for
    those who read every tenant, a tenant viewer's own findings, nodes and resets (counts
    over the whole cluster would tell how many findings the other tenants have)."""
    live = (Finding.Status.OPEN, Finding.Status.ACCEPTED)
    rows = list(
        Finding.objects.visible_to(user)
        .filter(cluster=cluster, status__in=live)
        .order_by()
        # As shown: an acceptance past its expiry counts as open.
        .annotate(shown=effective_status_expr(timezone.now()))
        .values("check_id", "shown")
        .annotate(n=Count("id", distinct=True))
    )
    gpu_nodes = Node.objects.visible_to(user).filter(cluster=cluster, is_gpu_node=True)
    kinds_read, kinds_unread = _kinds_read(cluster)
    return ChecklistFacts(
        synced=cluster.sync_runs.filter(status=SyncRun.Status.SUCCEEDED).exists(),
        gpu_nodes=gpu_nodes.count(),
        time_sliced_nodes=gpu_nodes.filter(sharing_strategy__in=["time_slicing", "mps"]).count(),
        other_accelerator_nodes=Node.objects.visible_to(user)
        .filter(cluster=cluster, is_accelerator_node=True, is_gpu_node=False)
        .count(),
        firmware_known=gpu_nodes.exclude(firmware_version="").count(),
        patch_unknown_nodes=gpu_nodes.filter(patch_status=Node.PatchStatus.UNKNOWN).count(),
        open_findings={r["check_id"]: r["n"] for r in rows if r["shown"] == Finding.Status.OPEN},
        accepted_findings={
            r["check_id"]: r["n"] for r in rows if r["shown"] == Finding.Status.ACCEPTED
        },
        registered_checks=frozenset(CHECKS),
        trust_classes={tc.slug: tuple(tc.allowed_modes) for tc in TrustClass.objects.all()},
        provider=cluster.provider.name if cluster.provider_id else None,
        telemetry_samples=int(GpuReading.objects.filter(cluster=cluster).exists()),
        reset_attestations=ResetAttestation.objects.visible_to(user)
        .filter(cluster=cluster)
        .count(),
        **_handover_facts(cluster, user),
        kinds_read=kinds_read,
        kinds_unread=kinds_unread,
        unjudged_checks=frozenset(checks_unjudged(kinds_unread)),
        **_bulletin_facts(),
    )


# Node sharing strategies under which tenants use one GPU at the same time, not in turn.
SHARED_AT_ONCE = (Node.SharingStrategy.TIME_SLICING, Node.SharingStrategy.MPS)


def _handover_facts(cluster: Cluster, user) -> dict[str, object]:
    """What item 9 needs to know it looked (posture.checklist._resets): LEAK-001's window, how
    long the GPU samples in it span, and the handovers sync history recorded in it; a tenant
    viewer counts only those its tenants were a party to (not the other tenants' traffic).
    The samples are those of the GPU nodes whose GPUs pass whole from tenant to tenant
    (exclusive and MIG, as LEAK-001 reads them): ten days of a time-sliced node's samples
    watch no exclusive GPU. A cluster with no such node: all its samples."""
    days = settings.GPUPOSTURE_TELEMETRY_RETENTION_DAYS
    since = timezone.now() - timedelta(days=days)
    samples = GpuReading.objects.filter(cluster=cluster, time__gte=since)
    whole = list(
        Node.objects.filter(cluster=cluster, is_gpu_node=True)
        .exclude(sharing_strategy__in=SHARED_AT_ONCE)
        .values_list("name", flat=True)
    )
    if whole:
        samples = samples.filter(hostname__in=whole)
    span = samples.aggregate(first=Min("time"), last=Max("time"))
    hours = (span["last"] - span["first"]).total_seconds() / 3600 if span["first"] else 0.0
    handovers = SyncHandover.objects.filter(cluster=cluster, next_start__gte=since)
    if not reads_all_posture(user):
        slugs = list(Tenant.objects.visible_to(user).values_list("slug", flat=True))
        handovers = handovers.filter(Q(previous_holder__in=slugs) | Q(next_holder__in=slugs))
    return {
        "handover_window_days": days,
        "telemetry_span_hours": hours,
        "handovers_recorded": handovers.count(),
    }


def _kinds_read(cluster: Cluster) -> tuple[frozenset[str] | None, frozenset[str]]:
    """The kinds the last successful full sync read objects of (a watch reads only changes),
    None when there is none; and those it certainly did not read (one query)."""
    read = last_full_read(cluster)
    if read is None:
        return None, frozenset()
    counts, unread = read
    return frozenset(k for k, n in counts.items() if n), frozenset(unread)


def finding_not_rejudged(finding: Finding) -> str:
    """Why a live finding was kept as it was by the last sync, which could not judge its
    check ("not re-judged in the last sync: it read no ..."); "" when it was judged."""
    if finding.status not in (Finding.Status.OPEN, Finding.Status.ACCEPTED):
        return ""
    return unjudged_note(finding.check_id, cluster_kinds_unread(finding.cluster), finding.evidence)


def _bulletin_facts() -> dict[str, object]:
    last = Bulletin.objects.order_by("-imported_at").values_list("imported_at", flat=True).first()
    return {
        "bulletins": Bulletin.objects.count(),
        "days_since_bulletin_import": (timezone.now() - last).days if last else None,
    }
