"""The read model the checks take: one cluster's snapshot plus the tenant registry.

PURE: no ORM, no network. posture.read_model builds it from the database; tests build it by hand.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from functools import cached_property
from typing import Any

from inventory.drift import DriftChange
from inventory.fractions import is_reservation_pod
from inventory.holdings import HoldingHandover
from inventory.owners import OwnerIndex, WorkloadRef, owner_chain, workload_of
from inventory.snapshot import ClusterSnapshot, Pod, Workload
from inventory.sources.gke_managed import gke_managed_namespaces
from inventory.sources.openshift import openshift_namespaces
from inventory.sources.stack_namespaces import stack_namespaces
from posture.exemptions import Exemption
from telemetry.evidence import TelemetryFacts
from tenants.mapping import (
    UNCLASSIFIED,
    UNCLASSIFIED_NAME,
    claimed_namespaces,
    platform_namespaces,
    resolve_namespace_owners,
)
from tenants.policy import DEFAULT_TRUST_CLASSES
from tenants.pool_taints import PoolTaintRules


@dataclass(frozen=True)
class TrustClassInfo:
    slug: str
    name: str = ""
    # Modes (DESIGN §2 `sharing_mode` values) a tenant of this class may share a GPU by.
    allowed_modes: tuple[str, ...] = ()
    # Modes allowed only when every other sharer is of this same class.
    same_class_only_modes: tuple[str, ...] = ()
    requires_dedicated_pool: bool = False
    # POD-007: registries (host or host/path prefixes) images must come from; empty = any.
    approved_registries: tuple[str, ...] = ()
    # False when built by hand (tests name what they judge); the seed tenant classes and a new
    # class in the admin require a digest (tenants.policy.DEFAULT_TRUST_CLASSES, the model).
    require_image_digest: bool = False
    rank: int = 0  # higher demands more isolation (sensitive highest); "a lower class"
    # The class's demands for sensitive data (DESIGN §3): a reset attestation between
    # exclusive tenants, approvals that expire after this many days.
    requires_reset_attestation: bool = False
    approval_expiry_days: int | None = None

    @property
    def guards_sensitive_data(self) -> bool:
        """The class demands what DESIGN §3 asks for sensitive data (a reset attestation, or
        approvals that expire): told from its data, whatever its slug."""
        return self.requires_reset_attestation or self.approval_expiry_days is not None


@dataclass(frozen=True)
class TenantInfo:
    slug: str
    name: str
    trust_class: TrustClassInfo
    namespaces: tuple[str, ...] = ()
    principals: tuple[str, ...] = ()  # "group:NAME", "user:NAME"


@dataclass(frozen=True)
class DriftEventInfo:
    """A recorded drift event (inventory.drift.DriftChange) with its identity and time."""

    id: int
    detected_at: str  # ISO 8601
    sync_run: int
    change: DriftChange


@dataclass(frozen=True)
class SharingRequestInfo:
    """A sharing request of a tenant on this cluster and its state at evaluation time."""

    id: int
    tenant: str  # slug
    mode: str
    node_pool: str = ""  # "" = the whole cluster
    # "active" (approved, unexpired), "pending", "denied", "revoked" or "expired" (its own
    # expiry or its class's ceiling)
    state: str = "pending"
    # "with_other_tenants", or "within_tenant": the tenant's current class forbids the mode
    # between tenants and the approval covers its own pods only (tenants.policy.request_scope).
    # Either clears SHARE-004 for the tenant's use; no approval quiets a co-tenancy check.
    scope: str = "with_other_tenants"
    requested_at: str = ""  # ISO 8601, like the other times below
    requested_by: str = ""
    decided_by: str = ""
    decided_at: str = ""
    expires_at: str = ""

    def covers_pool(self, pool: str) -> bool:
        return not self.node_pool or self.node_pool == pool


@dataclass(frozen=True)
class ProviderFacts:
    """The provider hosting the cluster and its questionnaire standing (PROV-001, PROV-002)."""

    slug: str
    name: str
    # The accepted, unexpired assessment, if any.
    assessment_id: int | None = None
    accepted_at: str = ""  # ISO 8601
    expires_at: str = ""
    score: float | None = None
    red_flags: tuple[dict, ...] = ()  # {"question", "category", "text", "answer", "reason"}
    # Otherwise: the newest assessment's id and status, and when the last accepted one expired.
    latest_id: int | None = None
    latest_status: str = ""
    expired_at: str = ""


@dataclass(frozen=True)
class PostureInputs:
    cluster: str
    snapshot: ClusterSnapshot
    tenants: tuple[TenantInfo, ...] = ()
    # Drift recorded within the drift window (newest last); DRIFT- checks report each.
    drift_events: tuple[DriftEventInfo, ...] = ()
    exemptions: tuple[Exemption, ...] = ()
    # node name -> {"status", "exposures": [inventory.patching.status.Exposure as dicts], "notes",
    # "not_affected": [Exposure dicts with a reason], "unknown_components": [kinds]}; a vGPU
    # guest whose labels name its hypervisor's vGPU Manager also "hypervisor_manager":
    # {"version", "branch_label", "status", "exposures", "notes"} (inventory.patching.hypervisor)
    patch: dict[str, dict[str, object]] = field(default_factory=dict)
    patch_sla_days: dict[str, int] = field(default_factory=dict)  # severity -> days
    telemetry: TelemetryFacts = field(default_factory=TelemetryFacts)
    # GPU handovers between tenants the pod counts of two syncs make certain, with no reset
    # attested between them (inventory.holdings, telemetry.sync_handovers): LEAK-001 without
    # telemetry, at sync granularity.
    sync_handovers: tuple[HoldingHandover, ...] = ()
    # Sharing requests of this cluster, newest first (SHARE-004, DRIFT-004).
    sharing_requests: tuple[SharingRequestInfo, ...] = ()
    provider: ProviderFacts | None = None  # None: the cluster is our own
    # GPUPOSTURE_PLATFORM_NAMESPACES as now configured, beside those the snapshot found.
    platform_configured: frozenset[str] = frozenset()
    # The class unclassified namespaces are judged by (GPUPOSTURE_UNCLASSIFIED_CLASS as the
    # registry defines it); None: the seed `external`, the strictest.
    unclassified_class: TrustClassInfo | None = None
    # GPUPOSTURE_POOL_TAINT_KEYS and each class's exact pool taints (K8S-002, POD-009).
    pool_taint_rules: PoolTaintRules = field(default_factory=PoolTaintRules)
    # DRIFT-005: dialect ("vap", "kyverno") -> the generated pack's objects, for each dialect
    # of which the cluster runs objects of ours (posture/policy_packs.py); empty: none.
    policy_packs: dict[str, tuple[dict[str, Any], ...]] = field(default_factory=dict)
    # Kinds the cluster's last full sync certainly did not read (inventory.kinds_read: live
    # lists refused, always-present kinds an export lacked); a check that can say "cannot
    # tell" rather than not judging reads it (K8S-007 and the CNIs' own policy kinds).
    kinds_unread: frozenset[str] = frozenset()
    extra: dict[str, object] = field(default_factory=dict)

    @cached_property
    def unclassified(self) -> TenantInfo:
        """The party of namespaces no tenant claims that are not the platform's (DESIGN §3):
        one tenant, so every check judges its pods as it judges a tenant's."""
        cls = self.unclassified_class or seed_trust_class("external")
        return TenantInfo(slug=UNCLASSIFIED, name=UNCLASSIFIED_NAME, trust_class=cls)

    @cached_property
    def tenants_by_slug(self) -> dict[str, TenantInfo]:
        found = {t.slug: t for t in self.tenants if t.slug != UNCLASSIFIED}
        return {**found, UNCLASSIFIED: self.unclassified}

    @cached_property
    def namespace_owner(self) -> dict[str, str]:
        """namespace -> the tenant that CLAIMS it: the registry's list first, then the
        namespace label. Unclassified namespaces are not in it."""
        return resolve_namespace_owners(
            namespace_labels={ns.name: ns.labels for ns in self.snapshot.namespaces},
            registry={ns: t.slug for t in self.tenants for ns in t.namespaces},
            known_tenants=set(self.tenants_by_slug),
        )

    @cached_property
    def platform_namespaces(self) -> frozenset[str]:
        """The platform's namespaces (tenants.mapping.platform_namespaces): the defaults, the
        labelled ones, the GPU stack's as found (stack_namespaces, gke_managed_namespaces),
        OpenShift's own on an OpenShift cluster (openshift_namespaces), the configured ones and
        those the sync recorded (a snapshot rebuilt from the database does not carry them);
        never a claimed one."""
        return platform_namespaces(
            namespace_labels={ns.name: ns.labels for ns in self.snapshot.namespaces},
            operator_namespaces=stack_namespaces(
                self.snapshot.workloads, self.snapshot.bindings, self.snapshot.pods
            )
            | gke_managed_namespaces(
                self.snapshot.workloads,
                self.snapshot.pods,
                (node.labels for node in self.snapshot.nodes),
            )
            | openshift_namespaces(
                {ns.name for ns in self.snapshot.namespaces}
                | {p.namespace for p in self.snapshot.pods}
                | {w.namespace for w in self.snapshot.workloads},
                (node.labels for node in self.snapshot.nodes),
            ),
            configured=set(self.snapshot.platform_namespaces) | self.platform_configured,
            tenant_namespaces=[ns for t in self.tenants for ns in t.namespaces],
        )

    @cached_property
    def tenant_claimed(self) -> frozenset[str]:
        """The namespaces tenants claim (tenants.mapping.claimed_namespaces), as the sync takes
        them: their pods never speak for a node's GPU stack, versions or settings."""
        return claimed_namespaces(
            namespace_labels={ns.name: ns.labels for ns in self.snapshot.namespaces},
            tenant_namespaces=[ns for t in self.tenants for ns in t.namespaces],
        )

    def is_unclassified(self, namespace: str) -> bool:
        return namespace not in self.namespace_owner and namespace not in self.platform_namespaces

    def claimed_tenant_of_namespace(self, namespace: str) -> TenantInfo | None:
        """The tenant that claims the namespace; None for platform and unclassified ones."""
        slug = self.namespace_owner.get(namespace)
        return self.tenants_by_slug.get(slug) if slug else None

    def tenant_of_namespace(self, namespace: str) -> TenantInfo | None:
        """The party a namespace's pods are judged as: its tenant, `unclassified` when nobody
        claims it and it is not the platform's, None for a platform namespace."""
        claimed = self.claimed_tenant_of_namespace(namespace)
        if claimed is None and self.is_unclassified(namespace):
            return self.unclassified
        return claimed

    @cached_property
    def tenants_present(self) -> tuple[TenantInfo, ...]:
        """Tenants with a namespace or an active pod in this cluster, by slug."""
        slugs = {self.namespace_owner.get(ns.name) for ns in self.snapshot.namespaces}
        slugs |= {tenant.slug for _, tenant in self.tenant_pods}
        return tuple(self.tenants_by_slug[s] for s in sorted(s for s in slugs if s))

    def is_reservation(self, pod: Pod) -> bool:
        """A KAI / Run:ai reservation pod (inventory.fractions.is_reservation_pod): the
        platform's placeholder holding the GPU its fractions share, never a party."""
        # The namespace first: a lookup, where the fraction is built from the annotations
        # (every check asks this of every pod, and most pods are in a tenant's namespace).
        if self.namespace_owner.get(pod.namespace):
            return False
        return is_reservation_pod(pod, owned=False, platform=self.platform_namespaces)

    def tenant_of_pod(self, pod: Pod) -> TenantInfo | None:
        """None means a platform pod: a platform namespace's, or a reservation placeholder."""
        if self.is_reservation(pod):
            return None
        return self.tenant_of_namespace(pod.namespace)

    @cached_property
    def tenant_pods(self) -> tuple[tuple[Pod, TenantInfo], ...]:
        return tuple(
            (pod, tenant)
            for pod in self.snapshot.pods
            if pod.is_active and (tenant := self.tenant_of_pod(pod)) is not None
        )

    @cached_property
    def template_pods(self) -> tuple[tuple[Pod, TenantInfo], ...]:
        """The pod templates (Workload.template) of tenant workloads no active pod resolves
        to: a CronJob between runs, a Deployment scaled to 0, a suspended Job, a StatefulSet
        whose pods are all gone. The pod-hardening checks judge these as they judge pods, under
        the same workload, so a finding keeps its identity when pods come and go; a workload
        with an active pod is judged from its pods only."""
        running = {_identity(self.workload_of(pod)) for pod in self.snapshot.pods if pod.is_active}
        found = []
        for workload in self.snapshot.workloads:
            pod = workload.template
            if pod is None or (tenant := self.tenant_of_pod(pod)) is None:
                continue
            if _identity(self.workload_of(pod)) not in running:
                found.append((pod, tenant))
        return tuple(sorted(found, key=lambda item: (item[0].namespace, item[0].name)))

    def template_workload(self, pod: Pod) -> Workload | None:
        """The workload whose template `pod` is (template_pods), None for a real pod."""
        return self._templates.get((pod.namespace, pod.owner_kind or "", pod.owner_name or ""))

    def workload_template(self, ref: WorkloadRef) -> Pod | None:
        """The pod template of the workload `ref` names, where the snapshot holds it (a
        built-in controller's); None for a custom resource's or a bare pod."""
        workload = self._templates.get((ref.namespace, ref.kind, ref.name))
        return workload.template if workload is not None else None

    @cached_property
    def _templates(self) -> dict[tuple[str, str, str], Workload]:
        return {(w.namespace, w.kind, w.name): w for w in self.snapshot.workloads if w.template}

    @cached_property
    def owner_index(self) -> OwnerIndex:
        return OwnerIndex(self.snapshot.owners, self.snapshot.pods)

    def workload_of(self, pod: Pod) -> WorkloadRef:
        """The workload behind the pod (inventory/owners.py), resolved once per pod."""
        # The owner is part of the key: a template pod is named after its controller, which
        # may share its name with a bare pod.
        key = ("workload", pod.namespace, pod.name, pod.owner_kind, pod.owner_name)
        if key not in self.memo:
            self.memo[key] = workload_of(pod, self.owner_index)
        return self.memo[key]  # type: ignore[return-value]  # memo[key] holds what this function stored under it

    def owner_chain(self, pod: Pod) -> frozenset[tuple[str, str, str]]:
        """The objects from the pod up to its workload (inventory.owners.owner_chain), as a set
        computed once per pod: a workload's drafts intersect theirs (FindingDraft.chain)."""
        key = ("chain", pod.namespace, pod.name, pod.owner_kind, pod.owner_name, pod.phase)
        if key not in self.memo:
            self.memo[key] = frozenset(owner_chain(pod, self.owner_index))
        return self.memo[key]  # type: ignore[return-value]  # memo[key] holds what this function stored under it

    def with_facts(self, **changes: Any) -> PostureInputs:
        """These inputs with new telemetry or expected policy packs (MEMO_FREE_FIELDS), keeping
        all that was derived so far (the memo, every cached property): dataclasses.replace
        starts afresh, and posture_inputs derives the env holdings telemetry is handed before
        adding it, which the checks would then derive again. Safe because nothing derived
        reads these fields: the checks that use them read them directly."""
        if not set(changes) <= MEMO_FREE_FIELDS:
            raise ValueError(
                f"derived views may depend on {sorted(set(changes) - MEMO_FREE_FIELDS)}"
            )
        _ = self.memo  # created now, so the inputs made from these share this very dict
        changed = replace(self, **changes)
        fields_ = {f.name for f in fields(self)}
        changed.__dict__.update((k, v) for k, v in self.__dict__.items() if k not in fields_)
        return changed

    @cached_property
    def memo(self) -> dict[object, object]:
        """Derived views several checks share within one evaluation (GPU holdings per node),
        computed once: the inputs never change after they are built."""
        return {}

    @cached_property
    def pods_by_node(self) -> dict[str, tuple[Pod, ...]]:
        grouped: dict[str, list[Pod]] = {}
        for pod in self.snapshot.pods:
            if pod.node_name and pod.is_active:
                grouped.setdefault(pod.node_name, []).append(pod)
        return {k: tuple(v) for k, v in grouped.items()}


# The PostureInputs fields no memoised view or cached property reads (PostureInputs.with_facts).
MEMO_FREE_FIELDS = frozenset({"telemetry", "policy_packs"})


def _identity(ref: WorkloadRef) -> tuple[str, str, str]:
    return (ref.kind, ref.namespace, ref.name)


def seed_trust_class(slug: str) -> TrustClassInfo:
    """A seed class as first installed (tenants.policy.DEFAULT_TRUST_CLASSES): the fallback
    where the registry's own row is not in the inputs."""
    return trust_class_from_data(next(d for d in DEFAULT_TRUST_CLASSES if d["slug"] == slug))


def trust_class_from_data(data: dict[str, Any]) -> TrustClassInfo:
    return TrustClassInfo(
        slug=data["slug"],
        name=data["name"],
        allowed_modes=tuple(data["allowed_modes"]),
        same_class_only_modes=tuple(data["same_class_only_modes"]),
        requires_dedicated_pool=data["requires_dedicated_pool"],
        # The seed image policy (POD-007), so a fallback class judges images as the seeded
        # database row does.
        approved_registries=tuple(data["approved_registries"]),
        require_image_digest=data["require_image_digest"],
        rank=data["rank"],
        requires_reset_attestation=data["requires_reset_attestation"],
        approval_expiry_days=data["approval_expiry_days"],
    )
