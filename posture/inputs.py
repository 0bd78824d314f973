"""The read model the checks take: one cluster's snapshot plus the tenant registry.

PURE: no ORM, no network. posture.selectors builds it from the database; tests build it by hand.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from inventory.drift import DriftChange
from inventory.owners import OwnerIndex, WorkloadRef, workload_of
from inventory.snapshot import ClusterSnapshot, Pod
from telemetry.evidence import TelemetryFacts
from tenants.mapping import resolve_namespace_owners


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
    require_image_digest: bool = False
    rank: int = 0  # higher demands more isolation (sensitive highest); "a lower class"


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
    # "active" (approved, unexpired), "pending", "denied", "revoked" or "expired"
    state: str = "pending"
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
class Exemption:
    """A platform component a check must not report: matched on the finding's subject.
    Empty fields match anything; `labels` must all be present on the subject."""

    id: int
    check_id: str
    namespace: str = ""
    kind: str = ""
    name: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    reason: str = ""

    def matches(self, check_id: str, kind: str, namespace: str, name: str, labels: dict) -> bool:
        return (
            self.check_id == check_id
            and (not self.namespace or self.namespace == namespace)
            and (not self.kind or self.kind == kind)
            and (not self.name or self.name == name)
            and all(labels.get(k) == v for k, v in self.labels.items())
        )


@dataclass(frozen=True)
class PostureInputs:
    cluster: str
    snapshot: ClusterSnapshot
    tenants: tuple[TenantInfo, ...] = ()
    # Drift recorded within the drift window (newest last); DRIFT- checks report each.
    drift_events: tuple[DriftEventInfo, ...] = ()
    exemptions: tuple[Exemption, ...] = ()
    # node name -> {"status", "exposures": [inventory.patching.Exposure as dicts], "notes",
    # "not_affected": [Exposure dicts with a reason], "unknown_components": [kinds]}
    patch: dict[str, dict[str, object]] = field(default_factory=dict)
    patch_sla_days: dict[str, int] = field(default_factory=dict)  # severity -> days
    telemetry: TelemetryFacts = field(default_factory=TelemetryFacts)
    # Sharing requests of this cluster, newest first (SHARE-004, DRIFT-004).
    sharing_requests: tuple[SharingRequestInfo, ...] = ()
    provider: ProviderFacts | None = None  # None: the cluster is our own
    # Namespaces whose pods are platform components even if a tenant label says otherwise.
    extra: dict[str, object] = field(default_factory=dict)

    @cached_property
    def tenants_by_slug(self) -> dict[str, TenantInfo]:
        return {t.slug: t for t in self.tenants}

    @cached_property
    def namespace_owner(self) -> dict[str, str]:
        """namespace -> tenant slug: the registry's list first, then the namespace label."""
        return resolve_namespace_owners(
            namespace_labels={ns.name: ns.labels for ns in self.snapshot.namespaces},
            registry={ns: t.slug for t in self.tenants for ns in t.namespaces},
            known_tenants=set(self.tenants_by_slug),
        )

    def tenant_of_namespace(self, namespace: str) -> TenantInfo | None:
        slug = self.namespace_owner.get(namespace)
        return self.tenants_by_slug.get(slug) if slug else None

    @cached_property
    def tenants_present(self) -> tuple[TenantInfo, ...]:
        """Tenants with a namespace or an active pod in this cluster, by slug."""
        slugs = {self.namespace_owner.get(ns.name) for ns in self.snapshot.namespaces}
        slugs |= {tenant.slug for _, tenant in self.tenant_pods}
        return tuple(self.tenants_by_slug[s] for s in sorted(s for s in slugs if s))

    def tenant_of_pod(self, pod: Pod) -> TenantInfo | None:
        """None means a platform pod (a namespace no tenant owns)."""
        return self.tenant_of_namespace(pod.namespace)

    @cached_property
    def tenant_pods(self) -> tuple[tuple[Pod, TenantInfo], ...]:
        return tuple(
            (pod, tenant)
            for pod in self.snapshot.pods
            if pod.is_active and (tenant := self.tenant_of_pod(pod)) is not None
        )

    @cached_property
    def owner_index(self) -> OwnerIndex:
        return OwnerIndex(self.snapshot.owners)

    def workload_of(self, pod: Pod) -> WorkloadRef:
        """The workload behind the pod (inventory/owners.py), resolved once per pod."""
        key = ("workload", pod.namespace, pod.name)
        if key not in self.memo:
            self.memo[key] = workload_of(pod, self.owner_index)
        return self.memo[key]  # type: ignore[return-value]

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
