"""The checks' read model: PostureInputs (posture.inputs, PURE) built from the database for one
cluster, the snapshot as last applied and everything the checks judge it by (tenants and
trust classes, drift, sharing requests, the hosting provider's questionnaire, exemptions,
patch records, telemetry). posture.services scores from it; enforcement builds a cluster's
policy pack from the same inputs. The pages' and the API's reads are posture.selectors."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db.models import Q, QuerySet
from django.utils import timezone

from inventory import snapshot as snap
from inventory.bulletins.patch_refresh import exposure_dicts, fixes_from_db
from inventory.drift import DriftChange
from inventory.models import Cluster, ClusterObject, DriftEvent, Node, Pod
from inventory.patching.hypervisor import hypervisor_manager, hypervisor_manager_status
from inventory.patching.sla import patch_sla_days
from inventory.selectors import cluster_kinds_unread
from posture.exemptions import Exemption
from posture.inputs import (
    DriftEventInfo,
    PostureInputs,
    ProviderFacts,
    SharingRequestInfo,
    TenantInfo,
    TrustClassInfo,
)
from posture.models import CheckExemption
from posture.policy_packs import expected_policy_packs
from posture.rules.env_holdings import env_accesses
from providers.models import Assessment
from telemetry.facts import telemetry_facts
from telemetry.hijack import EVERY_GPU, EnvHold
from telemetry.sync_handovers import unattested_sync_handovers
from tenants.models import SharingRequest, Tenant, TrustClass
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
    "service_account": ("service_accounts", snap.ServiceAccount),
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
        requires_reset_attestation=trust_class.requires_reset_attestation,
        approval_expiry_days=trust_class.approval_expiry_days,
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
        "tenant__trust_class", "requested_by", "decided_by"
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
        scope=r.scope(),
        requested_at=iso(r.requested_at),
        requested_by=r.requested_by.get_username(),
        decided_by=r.decided_by.get_username() if r.decided_by else "",
        decided_at=iso(r.decided_at),
        expires_at=iso(r.expires_at),
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
        tenants=tenant_infos() if tenants is None else tenants,
        drift_events=drift_events(cluster),
        sharing_requests=sharing_requests_for(cluster),
        provider=provider_facts(cluster),
        exemptions=exemptions_for(cluster),
        patch=_patch_records(cluster, snapshot),
        patch_sla_days=patch_sla_days(),
        platform_configured=frozenset(settings.GPUPOSTURE_PLATFORM_NAMESPACES),
        # Pods of namespaces nobody claims are judged by this class (the system check and
        # unclassified_tenant_ensure refuse a setting naming none); platform pods by theirs.
        unclassified_class=trust_class_info(unclassified) if unclassified else None,
        pool_taint_rules=pool_taint_rules(),
        sync_handovers=unattested_sync_handovers(cluster),
        kinds_unread=frozenset(cluster_kinds_unread(cluster)),
        extra={"platform_trust_class": trust_class_info(platform)} if platform else {},
    )
    # Telemetry says who holds a busy GPU through the variable (posture's notion of a holding;
    # telemetry sits below posture, so it is handed them).
    telemetry = telemetry_facts(cluster, snapshot, env_held=env_held_gpus(inputs))
    # Each keeps what was derived so far (the env holdings above among them): see with_facts.
    inputs = inputs.with_facts(telemetry=telemetry)
    # The pack is generated from these same inputs (no second read, no recursion).
    return inputs.with_facts(policy_packs=expected_policy_packs(cluster, snapshot, inputs))


def env_held_gpus(inputs: PostureInputs) -> dict[str, tuple[EnvHold, ...]]:
    """node -> the holds of pods on it through NVIDIA_VISIBLE_DEVICES, where the node honours
    it (posture.rules.env_holdings), as telemetry.facts reads them."""
    held: dict[str, tuple[EnvHold, ...]] = {}
    for node in inputs.snapshot.nodes:
        if not node.is_gpu_node:
            continue
        holds = tuple(
            EnvHold(
                pod=f"{a.pod.namespace}/{a.pod.name}",
                value=str(a.found.get("value")),
                devices=frozenset({EVERY_GPU} if a.every_device else a.devices or ()),
            )
            for a in env_accesses(inputs, node)
            if a.honoured and a.devices
        )
        if holds:
            held[node.name] = holds
    return held


def _patch_records(
    cluster: Cluster, snapshot: snap.ClusterSnapshot
) -> dict[str, dict[str, object]]:
    """node name -> its patch record (PostureInputs.patch), with a vGPU guest's hypervisor
    judgement where its labels name the vGPU Manager that hosts it."""
    fields = ("patch_status", "patch_exposures", "patch_notes", "patch_not_affected")
    rows = Node.objects.filter(cluster=cluster, is_gpu_node=True).values_list(
        "name", *fields, "patch_unknown"
    )
    records: dict[str, dict[str, object]] = {
        name: {
            "status": status,
            "exposures": exposures,
            "notes": notes,
            "not_affected": not_affected,
            "unknown_components": unknown,
        }
        for name, status, exposures, notes, not_affected, unknown in rows
    }
    _add_hypervisor_managers(records, snapshot)
    return records


def _add_hypervisor_managers(
    records: dict[str, dict[str, object]], snapshot: snap.ClusterSnapshot
) -> None:
    """A vGPU guest's hypervisor vGPU Manager judged against the bulletins now (not stored:
    the node's own patch record stays its own stack's); the fixes read only where a guest
    names one."""
    managers = {
        node.name: manager
        for node in snapshot.nodes
        if node.name in records
        and (manager := hypervisor_manager(node.labels, node.driver_version_source))
    }
    fixes = fixes_from_db() if managers else []
    for name, manager in managers.items():
        status = hypervisor_manager_status(manager, fixes)
        records[name]["hypervisor_manager"] = {
            "version": manager.version,
            "branch_label": manager.branch_label,
            "status": status.status,
            "exposures": exposure_dicts(status.exposures),
            "notes": [*status.unknown],
        }
