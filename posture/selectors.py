"""Reads for posture: the checks' read model, findings and scores as pages and API need them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from datetime import timedelta

from django.conf import settings
from django.db.models import Count, F, OuterRef, Q, QuerySet, Subquery
from django.utils import timezone

from gpuposture.base.enums import FindingStatus, Severity
from inventory import snapshot as snap
from inventory.drift import DriftChange
from inventory.models import Bulletin, Cluster, ClusterObject, DriftEvent, Node, Pod, SyncRun
from inventory.patch_sla import patch_sla_days
from posture import scoring
from posture.checklist import ChecklistFacts
from posture.finding_rows import visible_slugs
from posture.inputs import (
    DriftEventInfo,
    Exemption,
    PostureInputs,
    ProviderFacts,
    SharingRequestInfo,
    TenantInfo,
    TrustClassInfo,
)
from posture.models import (
    SEVERITY_ORDER,
    Action,
    CheckExemption,
    Finding,
    FindingTenant,
    TenantScore,
)
from posture.policy_packs import expected_policy_packs
from posture.rules import CHECKS
from providers.models import Assessment
from telemetry.facts import telemetry_facts
from telemetry.models import GpuReading, ResetAttestation
from tenants.models import SharingRequest, Tenant, TrustClass
from tenants.redaction import HiddenScope
from tenants.selectors import pool_taint_rules

# ClusterObject kind -> (snapshot attribute, dataclass)
_OBJECTS = {
    "namespace": ("namespaces", snap.Namespace),
    "quota": ("quotas", snap.ResourceQuota),
    "configmap": ("configmaps", snap.ConfigMap),
    "sharing_config": ("sharing_configs", snap.SharingConfig),
    "workload": ("workloads", snap.Workload),
    "service": ("services", snap.Service),
    "role": ("roles", snap.Role),
    "binding": ("bindings", snap.RoleBinding),
    "ingress": ("ingresses", snap.Ingress),
    "network_policy": ("network_policies", snap.NetworkPolicy),
    "gpu_operator_policy": ("gpu_operator_policies", snap.GpuOperatorPolicy),
    "owner": ("owners", snap.OwnerLink),
    "env_configmap": ("env_configmaps", snap.EnvConfigMap),
    "dra_claim": ("dra_claims", snap.DraClaim),
    "dra_claim_template": ("dra_claim_templates", snap.DraClaimTemplate),
    "dra_device_class": ("dra_device_classes", snap.DraDeviceClass),
    "dra_slice": ("dra_slices", snap.DraSlice),
    "admission_policy": ("admission_policies", snap.AdmissionPolicy),
    "admission_read": ("admission_reads", snap.AdmissionRead),
}


def trust_class_info(trust_class: TrustClass) -> TrustClassInfo:
    return TrustClassInfo(
        slug=trust_class.slug,
        name=trust_class.name,
        allowed_modes=tuple(trust_class.allowed_modes),
        same_class_only_modes=tuple(trust_class.same_class_only_modes),
        requires_dedicated_pool=trust_class.requires_dedicated_pool,
        approved_registries=tuple(trust_class.approved_registries),
        require_image_digest=trust_class.require_image_digest,
        rank=trust_class.rank,
    )


def tenant_infos() -> tuple[TenantInfo, ...]:
    # The registry's tenants; the system tenant `unclassified` is built by the read model.
    tenants = (
        Tenant.objects.filter(is_system=False)
        .select_related("trust_class")
        .prefetch_related("namespaces", "principals")
    )
    return tuple(
        TenantInfo(
            slug=t.slug,
            name=t.name,
            trust_class=trust_class_info(t.trust_class),
            namespaces=tuple(ns.name for ns in t.namespaces.all()),
            principals=tuple(f"{p.kind}:{p.name}" for p in t.principals.all()),
        )
        for t in tenants
    )


def cluster_snapshot(cluster: Cluster) -> snap.ClusterSnapshot:
    """Rebuild the last applied snapshot from the database (three queries, read in chunks).
    Orders as the models do, without joining the cluster for it (one cluster)."""
    with snap.gc_paused():  # tens of thousands of dataclasses, no cycles among them
        grouped: dict[str, list] = {attribute: [] for attribute, _ in _OBJECTS.values()}
        objects = ClusterObject.objects.filter(cluster=cluster).order_by(
            "kind", "namespace", "name"
        )
        for kind, data in objects.values_list("kind", "data").iterator(chunk_size=_CHUNK):
            attribute, cls = _OBJECTS[kind]
            grouped[attribute].append(snap.from_dict(cls, data))
        nodes = cluster.nodes.order_by("name").values_list("data", flat=True)
        pods = Pod.objects.filter(cluster=cluster).order_by("namespace", "name")
        return snap.ClusterSnapshot(
            nodes=tuple(_build(snap.Node, nodes)),
            pods=tuple(_build(snap.Pod, pods.values_list("data", flat=True))),
            **{k: tuple(v) for k, v in grouped.items()},
        )


_CHUNK = 2000


def _build(cls: type, rows: QuerySet) -> list:
    return [snap.from_dict(cls, data) for data in rows.iterator(chunk_size=_CHUNK)]


def exemptions_for(cluster: Cluster) -> tuple[Exemption, ...]:
    rows = CheckExemption.objects.filter(Q(cluster=cluster) | Q(cluster__isnull=True))
    return tuple(
        Exemption(
            id=e.pk,
            check_id=e.check_id,
            namespace=e.namespace,
            kind=e.kind,
            name=e.name,
            labels=dict(e.labels),
            reason=e.reason,
        )
        for e in rows.order_by("pk")
    )


def drift_events(cluster: Cluster) -> tuple[DriftEventInfo, ...]:
    """Drift recorded within the drift window, oldest first."""
    since = timezone.now() - timedelta(days=settings.GPUPOSTURE_DRIFT_WINDOW_DAYS)
    events = DriftEvent.objects.filter(cluster=cluster, detected_at__gte=since).order_by("id")
    return tuple(
        DriftEventInfo(
            id=e.pk,
            detected_at=e.detected_at.isoformat(),
            sync_run=e.sync_run_id,
            change=DriftChange(
                e.kind,
                e.check_id,
                e.subject_kind,
                e.subject_namespace,
                e.subject_name,
                e.summary,
                e.before,
                e.after,
                tuple(e.nodes),
            ),
        )
        for e in events
    )


# Decided requests no longer active only serve as evidence of why a mode has no approval.
CLOSED_REQUESTS_KEPT = 500


def sharing_requests_for(cluster: Cluster, now=None) -> tuple[SharingRequestInfo, ...]:
    """The cluster's sharing requests, newest first, each with its state at `now`."""
    now = now or timezone.now()
    rows = SharingRequest.objects.filter(cluster=cluster).select_related(
        "tenant", "requested_by", "decided_by"
    )
    open_ = Q(status__in=[SharingRequest.Status.PENDING, SharingRequest.Status.APPROVED])
    closed = rows.exclude(open_)[:CLOSED_REQUESTS_KEPT]
    found = sorted([*rows.filter(open_), *closed], key=lambda r: (r.requested_at, r.pk))
    return tuple(_request_info(r, now) for r in reversed(found))


def _request_info(r: SharingRequest, now) -> SharingRequestInfo:
    def iso(value) -> str:
        return value.isoformat() if value else ""

    state = r.state(now)
    return SharingRequestInfo(
        id=r.pk,
        tenant=r.tenant.slug,
        mode=r.mode,
        node_pool=r.node_pool,
        state="active" if state == SharingRequest.Status.APPROVED else state,
        requested_at=iso(r.requested_at),
        requested_by=r.requested_by.get_username(),
        decided_by=r.decided_by.get_username() if r.decided_by else "",
        decided_at=iso(r.decided_at),
        expires_at=iso(r.expires_at),
    )


def sharing_requests_current(tenant: Tenant) -> list[SharingRequest]:
    """The tenant's pending and approved (possibly expired) requests, newest first."""
    return list(
        SharingRequest.objects.filter(
            tenant=tenant,
            status__in=[SharingRequest.Status.PENDING, SharingRequest.Status.APPROVED],
        ).select_related("cluster")[:50]
    )


def provider_facts(cluster: Cluster, now=None) -> ProviderFacts | None:
    """The hosting provider's questionnaire standing at `now`; None for our own clusters."""
    if cluster.provider_id is None:
        return None
    now = now or timezone.now()
    provider = cluster.provider
    assessments = Assessment.objects.filter(provider=provider)
    accepted = assessments.accepted_unexpired(now).order_by("-reviewed_at", "-id").first()
    if accepted is not None:
        return ProviderFacts(
            slug=provider.slug,
            name=provider.name,
            assessment_id=accepted.pk,
            accepted_at=accepted.reviewed_at.isoformat() if accepted.reviewed_at else "",
            expires_at=accepted.expires_at.isoformat() if accepted.expires_at else "",
            score=accepted.score,
            red_flags=tuple(accepted.red_flags),
        )
    latest = assessments.order_by("-created_at", "-id").first()
    expired = (
        assessments.filter(status=Assessment.Status.ACCEPTED, expires_at__lte=now)
        .order_by("-expires_at")
        .values_list("expires_at", flat=True)
        .first()
    )
    return ProviderFacts(
        slug=provider.slug,
        name=provider.name,
        latest_id=latest.pk if latest else None,
        latest_status=latest.status if latest else "",
        expired_at=expired.isoformat() if expired else "",
    )


def posture_inputs(
    cluster: Cluster, tenants: tuple[TenantInfo, ...] | None = None
) -> PostureInputs:
    platform = TrustClass.objects.filter(slug="platform").first()
    unclassified = TrustClass.objects.filter(slug=settings.GPUPOSTURE_UNCLASSIFIED_CLASS).first()
    snapshot = cluster_snapshot(cluster)
    inputs = PostureInputs(
        cluster=cluster.name,
        snapshot=snapshot,
        telemetry=telemetry_facts(cluster, snapshot),
        tenants=tenant_infos() if tenants is None else tenants,
        drift_events=drift_events(cluster),
        sharing_requests=sharing_requests_for(cluster),
        provider=provider_facts(cluster),
        exemptions=exemptions_for(cluster),
        patch=_patch_records(cluster),
        patch_sla_days=patch_sla_days(),
        platform_configured=frozenset(settings.GPUPOSTURE_PLATFORM_NAMESPACES),
        # Pods of namespaces nobody claims are judged by this class (the system check and
        # unclassified_tenant_ensure refuse a setting naming none); platform pods by theirs.
        unclassified_class=trust_class_info(unclassified) if unclassified else None,
        pool_taint_rules=pool_taint_rules(),
        extra={"platform_trust_class": trust_class_info(platform)} if platform else {},
    )
    # The pack is generated from these same inputs (no second read, no recursion).
    return replace(inputs, policy_packs=expected_policy_packs(cluster, snapshot, inputs))


def _patch_records(cluster: Cluster) -> dict[str, dict[str, object]]:
    """node name -> its patch record (PostureInputs.patch)."""
    fields = ("patch_status", "patch_exposures", "patch_notes", "patch_not_affected")
    rows = Node.objects.filter(cluster=cluster, is_gpu_node=True).values_list(
        "name", *fields, "patch_unknown"
    )
    return {
        name: {
            "status": status,
            "exposures": exposures,
            "notes": notes,
            "not_affected": not_affected,
            "unknown_components": unknown,
        }
        for name, status, exposures, notes, not_affected, unknown in rows
    }


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
    return list(
        Action.objects.visible_to(user)
        .select_related("cluster")
        .prefetch_related("tenants")
        .order_by("-risk_removed", "key")[:limit]
    )


def with_tenant_slugs(findings: Iterable[Finding], scope: HiddenScope | None) -> list[Finding]:
    """Set `tenant_slugs` on each finding, or action (tenants prefetched): the tenants it
    affects that the viewer may see, by slug; a tenant viewer never learns the others' names."""
    found = list(findings)
    for finding in found:
        slugs = (t.slug for t in finding.tenants.all())
        finding.tenant_slugs = visible_slugs(slugs, scope)
    return found


OPEN_SEVERITIES = Severity.values()


def tenants_ranked(user) -> QuerySet[Tenant]:
    """Tenants the user may see, most risk first, each with its latest score (latest_risk,
    latest_score, latest_grade, latest_cap) and the risk of the run before it (previous_risk)."""
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
        )
        # Unclassified is a row only while unclaimed namespaces hold something to judge.
        .exclude(is_system=True, latest_risk__isnull=True)
        .exclude(is_system=True, latest_risk=0)
        # Most risk first: different findings never tie; unscored tenants lead (unknown).
        .order_by(F("latest_risk").desc(nulls_first=True), "slug")
    )


def tenants_overview(user) -> list[Tenant]:
    """tenants_ranked, each with its open findings counted per severity (open_critical, ...):
    two queries whatever the number of tenants.

    The counts are a query of their own, grouped by tenant over the finding links. Counted in
    the tenants' query (a join grouped by every tenant and class column) PostgreSQL guessed a
    hundred times the groups there are and spent 2 s JIT-compiling a 0.3 s query."""
    tenants = list(tenants_ranked(user))
    counted = (
        FindingTenant.objects.filter(
            tenant__in=Tenant.objects.visible_to(user), finding__status=Finding.Status.OPEN
        )
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


def nodes_for_list(user) -> QuerySet[Node]:
    return Node.objects.visible_to(user).select_related("cluster")


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
        "contributions": score.contributions if score else [],
        "k": scoring.K,
        "findings": findings,
    }


def _live_findings_sorted(tenant: Tenant) -> list[Finding]:
    findings = (
        Finding.objects.affecting(tenant=tenant)
        .filter(status__in=[FindingStatus.OPEN, FindingStatus.ACCEPTED])
        .select_related("cluster", "owner")  # the owner: a field of each serialized row
        .prefetch_related("tenants")
        .order_by("check_id", "id")
    )
    # Open before accepted, worst severity first (a stable sort keeps check id order).
    return sorted(findings, key=lambda f: (f.status != "open", SEVERITY_ORDER[f.severity]))


def checklist_facts(cluster: Cluster, user) -> ChecklistFacts:
    """What the checklist judges, counted over what `user` may see: the whole cluster for
    those who read every tenant, a tenant viewer's own findings, nodes and resets (counts
    over the whole cluster would tell how many findings the other tenants have)."""
    open_rows = (
        Finding.objects.visible_to(user)
        .filter(cluster=cluster, status=Finding.Status.OPEN)
        .order_by()
        .values("check_id")
        .annotate(n=Count("id", distinct=True))
    )
    gpu_nodes = Node.objects.visible_to(user).filter(cluster=cluster, is_gpu_node=True)
    return ChecklistFacts(
        synced=cluster.sync_runs.filter(status=SyncRun.Status.SUCCEEDED).exists(),
        gpu_nodes=gpu_nodes.count(),
        time_sliced_nodes=gpu_nodes.filter(sharing_strategy__in=["time_slicing", "mps"]).count(),
        firmware_known=gpu_nodes.exclude(firmware_version="").count(),
        open_findings={row["check_id"]: row["n"] for row in open_rows},
        registered_checks=frozenset(CHECKS),
        trust_classes={tc.slug: tuple(tc.allowed_modes) for tc in TrustClass.objects.all()},
        provider=cluster.provider.name if cluster.provider_id else None,
        telemetry_samples=int(GpuReading.objects.filter(cluster=cluster).exists()),
        reset_attestations=ResetAttestation.objects.visible_to(user)
        .filter(cluster=cluster)
        .count(),
        **_bulletin_facts(),
    )


def _bulletin_facts() -> dict[str, object]:
    last = Bulletin.objects.order_by("-imported_at").values_list("imported_at", flat=True).first()
    return {
        "bulletins": Bulletin.objects.count(),
        "days_since_bulletin_import": (timezone.now() - last).days if last else None,
    }
