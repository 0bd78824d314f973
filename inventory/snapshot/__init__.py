"""A normalised, ORM-free picture of one cluster at one moment.

Every source (a kubectl JSON snapshot, the live API, nvidia-smi XML) produces a ClusterSnapshot;
sync applies it to the database and the checks read it back. Plain frozen dataclasses with
to_dict()/from_dict() so a snapshot round-trips through JSON columns unchanged.

The dataclasses live in pods.py, nodes.py and objects.py (DRA and admission in the sibling
snapshot_dra.py and snapshot_admission.py), the JSON round trip in codec.py; every name is
re-exported here, so `from inventory import snapshot as snap` sees one namespace.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from inventory.snapshot.codec import (
    from_dict,
    gc_paused,
    to_dict,
    to_json,
)
from inventory.snapshot.nodes import (
    CAPACITY_KIND,
    LABEL_KIND,
    SHARING_STRATEGIES,
    ConfigMap,
    EnvConfigMap,
    Node,
    SharedResource,
    SharingConfig,
    SharingEntry,
    Taint,
    UnreadableConfig,
)
from inventory.snapshot.objects import (
    GpuOperatorPolicy,
    Ingress,
    Namespace,
    NetworkPolicy,
    OwnerLink,
    PolicyRule,
    ResourceQuota,
    Role,
    RoleBinding,
    Service,
    ServiceAccount,
    Subject,
    Workload,
)
from inventory.snapshot.pod_annotations import (
    FRACTION_ANNOTATIONS,
    GPU_ANNOTATIONS,
    INJECTOR_ANNOTATIONS,
    MESH_ANNOTATIONS,
)
from inventory.snapshot.pod_scope import PodScope
from inventory.snapshot.pods import (
    GPU_RESOURCE_PREFIX,
    SHARE_SCHEDULER_RESOURCES,
    SHARE_SCHEDULERS,
    TEMPLATE_PHASE,
    Container,
    EnvVar,
    Pod,
    Volume,
    VolumeMount,
    recorded_time,
)
from inventory.snapshot_admission import (
    AdmissionPolicy,
    AdmissionRead,
    AdmissionScope,
)
from inventory.snapshot_dra import (
    DraClaim,
    DraClaimTemplate,
    DraConfig,
    DraDevice,
    DraDeviceClass,
    DraRequest,
    DraResult,
    DraSlice,
    PodClaim,
)

__all__ = [
    "recorded_time",
    "AdmissionPolicy",
    "AdmissionRead",
    "AdmissionScope",
    "ClusterSnapshot",
    "ConfigMap",
    "Container",
    "DraClaim",
    "DraClaimTemplate",
    "DraConfig",
    "DraDevice",
    "DraDeviceClass",
    "DraRequest",
    "DraResult",
    "DraSlice",
    "EnvConfigMap",
    "EnvVar",
    "FRACTION_ANNOTATIONS",
    "GPU_ANNOTATIONS",
    "MESH_ANNOTATIONS",
    "INJECTOR_ANNOTATIONS",
    "GPU_RESOURCE_PREFIX",
    "SHARE_SCHEDULER_RESOURCES",
    "SHARE_SCHEDULERS",
    "GpuOperatorPolicy",
    "Ingress",
    "CAPACITY_KIND",
    "LABEL_KIND",
    "Namespace",
    "NetworkPolicy",
    "Node",
    "OwnerLink",
    "Pod",
    "PodClaim",
    "PodScope",
    "PolicyRule",
    "ResourceQuota",
    "Role",
    "RoleBinding",
    "SHARING_STRATEGIES",
    "Service",
    "ServiceAccount",
    "SharedResource",
    "SharingConfig",
    "SharingEntry",
    "Subject",
    "TEMPLATE_PHASE",
    "Taint",
    "UnreadableConfig",
    "Volume",
    "VolumeMount",
    "Workload",
    "from_dict",
    "gc_paused",
    "to_dict",
    "to_json",
]


@dataclass(frozen=True)
class ClusterSnapshot:
    nodes: tuple[Node, ...] = ()
    pods: tuple[Pod, ...] = ()
    namespaces: tuple[Namespace, ...] = ()
    quotas: tuple[ResourceQuota, ...] = ()
    configmaps: tuple[ConfigMap, ...] = ()
    sharing_configs: tuple[SharingConfig, ...] = ()
    workloads: tuple[Workload, ...] = ()
    services: tuple[Service, ...] = ()
    roles: tuple[Role, ...] = ()
    bindings: tuple[RoleBinding, ...] = ()
    ingresses: tuple[Ingress, ...] = ()
    network_policies: tuple[NetworkPolicy, ...] = ()
    gpu_operator_policies: tuple[GpuOperatorPolicy, ...] = ()
    owners: tuple[OwnerLink, ...] = ()
    env_configmaps: tuple[EnvConfigMap, ...] = ()
    # Dynamic Resource Allocation (inventory/snapshot_dra.py)
    dra_claims: tuple[DraClaim, ...] = ()
    dra_claim_templates: tuple[DraClaimTemplate, ...] = ()
    dra_device_classes: tuple[DraDeviceClass, ...] = ()
    dra_slices: tuple[DraSlice, ...] = ()
    # Admission control (inventory/snapshot_admission.py): the policies read, and how each
    # live list of their kinds went (empty from a snapshot file: what it holds is all we know).
    admission_policies: tuple[AdmissionPolicy, ...] = ()
    admission_reads: tuple[AdmissionRead, ...] = ()
    # ServiceAccounts with the cloud identity each is federated to (POD-010); none when the
    # snapshot holds no ServiceAccount (every namespace has at least `default`: not read).
    service_accounts: tuple[ServiceAccount, ...] = ()
    # Objects read per kind, including the ones not kept (for the SyncRun counts).
    counts: dict[str, int] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    # Kinds a live list was refused (none known from a snapshot file: inventory.kinds_read).
    unlisted: tuple[str, ...] = ()
    # The namespaces whose ConfigMaps could be GPU configuration (tenants.mapping).
    platform_namespaces: tuple[str, ...] = ()
