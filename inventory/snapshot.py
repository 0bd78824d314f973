"""A normalised, ORM-free picture of one cluster at one moment.

Every source (a kubectl JSON snapshot, the live API, nvidia-smi XML) produces a ClusterSnapshot;
sync applies it to the database and the checks read it back. Plain frozen dataclasses with
to_dict()/from_dict() so a snapshot round-trips through JSON columns unchanged.
"""

from __future__ import annotations

import functools
import gc
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import MISSING, dataclass, field, fields, is_dataclass
from typing import Any

from inventory.snapshot_admission import AdmissionPolicy, AdmissionRead, AdmissionScope
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

GPU_RESOURCE_PREFIX = "nvidia.com/"
# KAI Scheduler (and Run:ai before it): a pod asks for a share of one GPU by annotation.
FRACTION_ANNOTATIONS = ("gpu-fraction", "gpu-memory")
# The pod annotations kept (GPU scheduling facts, never anything else a pod carries): KAI's
# fraction request and how many GPUs it spans, the GPU a reservation pod holds (its UUID despite
# the name), Run:ai's older GPU index of a fraction pod, and HAMi's devices allocated.
GPU_ANNOTATIONS = frozenset(
    {
        *FRACTION_ANNOTATIONS,
        "gpu-fraction-num-devices",
        "run.ai/reserve_for_gpu_index",
        "runai-gpu",
        "hami.io/vgpu-devices-allocated",
    }
)

# "unknown": the device-plugin config that decides it could not be read and GFD's labels do
# not say (STACK-007); the checks then judge the node as time-sliced, the weakest isolation.
SHARING_STRATEGIES = ("none", "time_slicing", "mps", "mig", "vgpu", "unknown")


@dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str


@dataclass(frozen=True)
class EnvVar:
    name: str
    # The literal value, or None when the value comes from a reference (secret, configmap, field).
    value: str | None
    value_from: str | None = None
    # configMapKeyRef / secretKeyRef: the object and key the value is read from (names only).
    source: str | None = None
    key: str | None = None
    # A literal value the product does not read is sealed at the boundary (inventory/env_seal.py):
    # `value` is SEALED_VALUE and only its length and, if it is one, the credential rule that
    # matched are kept, so no secret pasted into a pod spec reaches the database.
    length: int | None = None
    credential_rule: str | None = None
    credential_kind: str | None = None
    credential_hint: str | None = None


@dataclass(frozen=True)
class VolumeMount:
    name: str
    mount_path: str
    read_only: bool = False


@dataclass(frozen=True)
class Volume:
    name: str
    host_path: str | None = None
    kind: str = "other"


@dataclass(frozen=True)
class Container:
    name: str
    image: str
    init: bool = False
    ephemeral: bool = False  # a debug container (spec.ephemeralContainers)
    privileged: bool = False
    allow_privilege_escalation: bool | None = None
    run_as_non_root: bool | None = None
    capabilities_add: tuple[str, ...] = ()
    capabilities_drop: tuple[str, ...] = ()
    # Only resources whose name starts with "nvidia.com/", values as quantity strings.
    gpu_requests: dict[str, str] = field(default_factory=dict)
    gpu_limits: dict[str, str] = field(default_factory=dict)
    env: tuple[EnvVar, ...] = ()
    volume_mounts: tuple[VolumeMount, ...] = ()
    ports: tuple[int, ...] = ()
    command: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    # envFrom sources as "secretRef:NAME" / "configMapRef:NAME", with ":PREFIX" appended when the
    # source has a prefix (names cannot hold a colon). Values are resolved only for
    # NVIDIA_VISIBLE_DEVICES, from ClusterSnapshot.env_configmaps.
    env_from: tuple[str, ...] = ()

    def env_from_sources(self) -> list[tuple[str, str, str]]:
        """(kind, name, prefix) of each envFrom source, in the order Kubernetes applies them."""
        parts = [source.split(":", 2) for source in self.env_from]
        return [(p[0], p[1] if len(p) > 1 else "", p[2] if len(p) > 2 else "") for p in parts]


@dataclass(frozen=True)
class Pod:
    namespace: str
    name: str
    node_name: str | None = None
    phase: str = "Unknown"
    service_account: str = "default"
    host_pid: bool = False
    host_ipc: bool = False
    host_network: bool = False
    containers: tuple[Container, ...] = ()
    volumes: tuple[Volume, ...] = ()
    labels: dict[str, str] = field(default_factory=dict)
    owner_kind: str | None = None
    owner_name: str | None = None
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: tuple[dict[str, str], ...] = ()
    # GPU scheduling annotations only (GPU_ANNOTATIONS: KAI / Run:ai fractions and reservations,
    # HAMi's allocation); every other annotation is dropped when the pod is read.
    annotations: dict[str, str] = field(default_factory=dict)
    # DRA: spec.resourceClaims, each with the claim it resolved to (status.resourceClaimStatuses)
    resource_claims: tuple[PodClaim, ...] = ()

    @property
    def gpu_fraction(self) -> dict[str, str]:
        """The KAI Scheduler / Run:ai fraction this pod asks for (`gpu-fraction`, `gpu-memory`):
        a share of a GPU held for it by a reservation pod, with no nvidia.com/* request."""
        return {k: v for k in FRACTION_ANNOTATIONS if (v := self.annotations.get(k, "").strip())}

    @property
    def uses_gpu(self) -> bool:
        """Holds a GPU resource or a GPU fraction."""
        return bool(self.gpu_resources) or bool(self.gpu_fraction)

    @property
    def gpu_resources(self) -> dict[str, int]:
        """GPU resources this pod holds: limits win (requests default to limits for extended
        resources), summed over app containers; init containers run before, so they count
        only when larger."""
        totals: dict[str, int] = {}
        init_max: dict[str, int] = {}
        for c in self.containers:
            merged = {**c.gpu_requests, **c.gpu_limits}
            for name, qty in merged.items():
                n = _quantity(qty)
                if c.init:
                    init_max[name] = max(init_max.get(name, 0), n)
                else:
                    totals[name] = totals.get(name, 0) + n
        for name, n in init_max.items():
            totals[name] = max(totals.get(name, 0), n)
        return {k: v for k, v in totals.items() if v > 0}

    @property
    def is_active(self) -> bool:
        return self.phase in ("Pending", "Running", "Unknown")


LABEL_KIND = "NodeLabel"  # UnreadableConfig.kind of a node label; its name is the label's key


@dataclass(frozen=True)
class UnreadableConfig:
    """GPU configuration the node's stack uses that could not be read (STACK-007)."""

    kind: str  # "ConfigMap", "ClusterPolicy" or LABEL_KIND (a GPU label of the node itself)
    namespace: str
    name: str
    key: str  # the ConfigMap key; "" for a ClusterPolicy
    purpose: str  # "device_plugin", "mig_parted" or "gpu_operator"
    error: str


@dataclass(frozen=True)
class SharedResource:
    """A resource the device plugin advertises on a node as replicas of some of its devices
    (time-slicing or MPS), as the node's config and capacity show it in effect."""

    name: str  # as advertised: "nvidia.com/gpu", "nvidia.com/gpu.shared", "nvidia.com/gpu-ts"
    source: str  # the resource whose devices it replicates ("nvidia.com/gpu", a MIG profile)
    mode: str  # "time_slicing" or "mps"
    replicas: int | None = None
    devices: tuple[str, ...] = ()  # the devices it covers as the config names them; () = all
    units: int | None = None  # physical devices behind it, where known
    # The name also carries devices that are not replicated (a `devices` subset with no rename):
    # a pod asking for it may get either.
    mixed: bool = False
    note: str = ""  # how the node's capacity bears the config out, when it does not plainly


@dataclass(frozen=True)
class Node:
    name: str
    labels: dict[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    # nvidia.com/* capacity as integers (time-slicing multiplies nvidia.com/gpu by replicas).
    gpu_capacity: dict[str, int] = field(default_factory=dict)
    gpu_model: str | None = None
    gpu_count: int | None = None  # physical GPUs, from nvidia.com/gpu.count
    driver_version: str | None = None
    driver_version_source: str | None = None  # "gfd-label", "gfd-label-legacy", "driver-pod"
    cuda_driver_version: str | None = None
    container_toolkit_version: str | None = None
    device_plugin_version: str | None = None
    gpu_operator_version: str | None = None
    dcgm_exporter_version: str | None = None
    mig_manager_version: str | None = None
    firmware_version: str | None = None
    sharing_strategy: str = "none"
    time_slicing_replicas: int | None = None
    mig_strategy: str | None = None
    mig_config: str | None = None
    mig_config_state: str | None = None
    # A MIG reconfiguration in progress (state pending or rebooting): when a sync first saw the
    # state, and when a sync last saw it (ISO 8601, set by inventory.sync; the label has no time).
    mig_config_state_since: str | None = None
    mig_config_state_seen: str | None = None
    device_plugin_config: str | None = None  # value of label nvidia.com/device-plugin.config
    # Per resource the node's device-plugin config replicates (rename, devices): its mode.
    # Empty when no readable config applies; other resources keep whole devices.
    resource_sharing: tuple[SharedResource, ...] = ()
    os_image: str | None = None
    kernel_version: str | None = None
    container_runtime: str | None = None
    kubelet_version: str | None = None
    unreadable_configs: tuple[UnreadableConfig, ...] = ()
    # GPU-stack component (inventory.components.COMPONENT_FIELDS) -> where the snapshot shows
    # it deployed for this node (its pod, or a DaemonSet that should run one here) ...
    deployed: dict[str, str] = field(default_factory=dict)
    # ... or why it is not deployed here (no pod, no DaemonSet scheduling here): such a
    # component is "not installed", which is not "version unknown".
    not_installed: dict[str, str] = field(default_factory=dict)

    @property
    def is_gpu_node(self) -> bool:
        return bool(self.gpu_count) or any(v > 0 for v in self.gpu_capacity.values())


@dataclass(frozen=True)
class Namespace:
    name: str
    labels: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ResourceQuota:
    namespace: str
    name: str
    hard: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class SharingEntry:
    """One entry of `sharing.timeSlicing.resources` / `sharing.mps.resources`, as written."""

    name: str  # the resource whose devices are replicated
    rename: str | None = None
    replicas: int | None = None
    devices: tuple[str, ...] = ()  # a list of GPU / MIG indices or UUIDs; () with no count = all
    device_count: int | None = None  # `devices: N`: the first N devices


@dataclass(frozen=True)
class SharingConfig:
    """One device-plugin config (a key of a ConfigMap) and what it does to GPUs."""

    namespace: str
    configmap: str
    key: str
    mode: str  # "time_slicing", "mps" or "none"
    replicas: int | None = None
    fail_requests_greater_than_one: bool = False
    rename_by_default: bool = False
    resources: tuple[str, ...] = ()
    mig_strategy: str | None = None
    # How the plugin hands devices to the runtime (envvar, volume-mounts, cdi-annotations,
    # cdi-cri); bulletins condition some exposures on it.
    device_list_strategy: str | None = None
    entries: tuple[SharingEntry, ...] = ()  # the replicated resources of the active mode


@dataclass(frozen=True)
class ConfigMap:
    """A ConfigMap we keep: only those recognised as device-plugin or MIG configuration
    (other ConfigMaps may carry credentials and are never stored)."""

    namespace: str
    name: str
    purpose: str  # "device_plugin" or "mig_parted"
    keys: tuple[str, ...] = ()
    data_hash: str = ""
    # mig-parted configs only: the keys that hold one, as written (the MIG partitioner loads a
    # node's layout from them). Layouts are not secret; other keys are never kept.
    data: dict[str, str] = field(default_factory=dict)
    # key -> why it could not be read (too deep, too large, not YAML); its settings are unknown.
    unreadable: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class EnvConfigMap:
    """A ConfigMap a pod reads environment from (envFrom, or configMapKeyRef for
    NVIDIA_VISIBLE_DEVICES): its key names, and the values only of the keys that become
    NVIDIA_VISIBLE_DEVICES in some pod. Nothing else of it is kept (it may hold anything)."""

    namespace: str
    name: str
    keys: tuple[str, ...] = ()
    values: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Workload:
    """A controller (DaemonSet, Deployment) with the images of its pod template."""

    kind: str
    namespace: str
    name: str
    labels: dict[str, str] = field(default_factory=dict)
    images: dict[str, str] = field(default_factory=dict)  # container name -> image
    spec_hash: str = ""
    # GPU-stack controllers only: the ConfigMaps their pods mount or read (volumes, envFrom,
    # configMapKeyRef), which is where the device plugin and MIG Manager take their config.
    config_refs: tuple[str, ...] = ()
    # GPU-stack DaemonSets only: where the template's pods may run (inventory.placement), so
    # a node without the component's pod can be told "not installed" from "pod missing".
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: tuple[dict[str, str], ...] = ()
    affinity_terms: tuple[dict[str, Any], ...] = ()  # required nodeSelectorTerms, as written


@dataclass(frozen=True)
class Service:
    namespace: str
    name: str
    type: str = "ClusterIP"
    selector: dict[str, str] = field(default_factory=dict)
    ports: tuple[int, ...] = ()  # target ports where numeric, else service ports


@dataclass(frozen=True)
class PolicyRule:
    api_groups: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()


@dataclass(frozen=True)
class Role:
    kind: str  # "Role" or "ClusterRole"
    name: str
    namespace: str | None = None
    rules: tuple[PolicyRule, ...] = ()
    aggregation_labels: tuple[dict[str, str], ...] = ()
    labels: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Subject:
    kind: str  # "User", "Group", "ServiceAccount"
    name: str
    namespace: str | None = None


@dataclass(frozen=True)
class RoleBinding:
    kind: str  # "RoleBinding" or "ClusterRoleBinding"
    name: str
    namespace: str | None
    role_kind: str
    role_name: str
    subjects: tuple[Subject, ...] = ()


@dataclass(frozen=True)
class Ingress:
    namespace: str
    name: str
    ingress_class: str | None = None
    hosts: tuple[str, ...] = ()
    services: tuple[str, ...] = ()  # backend Service names in the same namespace


@dataclass(frozen=True)
class NetworkPolicy:
    namespace: str
    name: str
    pod_selector: dict[str, str] = field(default_factory=dict)  # matchLabels; {} selects all
    selects_all_pods: bool = True
    policy_types: tuple[str, ...] = ()
    ingress_rules: int = 0
    egress_rules: int = 0


@dataclass(frozen=True)
class GpuOperatorPolicy:
    """A GPU Operator ClusterPolicy: its name and what it configures (see
    inventory/sources/gpu_operator.py for the fields of `spec`)."""

    name: str
    spec: dict[str, Any] = field(default_factory=dict)
    spec_hash: str = ""
    error: str = ""  # why the object could not be read ("" when it was)


@dataclass(frozen=True)
class OwnerLink:
    """Who owns a ReplicaSet or Job (its controller ownerReference), or that a CronJob exists:
    enough to name the workload behind a pod (inventory/owners.py). Never the object's spec."""

    kind: str  # "ReplicaSet", "Job" or "CronJob"
    namespace: str
    name: str
    owner_kind: str | None = None  # None: it has no owner (a bare ReplicaSet or Job)
    owner_name: str | None = None


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
    # Objects read per kind, including the ones not kept (for the SyncRun counts).
    counts: dict[str, int] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    # The namespaces whose ConfigMaps could be GPU configuration (tenants.mapping).
    platform_namespaces: tuple[str, ...] = ()


def _quantity(value: str | int) -> int:
    """GPU quantities are whole numbers ("1", 2); anything else counts as 0."""
    try:
        return int(str(value).strip())
    except ValueError:
        return 0


# --- JSON round trip -------------------------------------------------------------------------
# Sync converts every pod of a cluster (tens of thousands) on each run and the checks rebuild
# them all from the database, so these are written for speed: no dataclasses.asdict (it
# deep-copies every value) and no generic fields() walk per object.

_NESTED: dict[type, dict[str, type]] = {
    Node: {
        "taints": Taint,
        "unreadable_configs": UnreadableConfig,
        "resource_sharing": SharedResource,
    },
    SharingConfig: {"entries": SharingEntry},
    Container: {"env": EnvVar, "volume_mounts": VolumeMount},
    Pod: {"containers": Container, "volumes": Volume, "resource_claims": PodClaim},
    DraClaim: {
        "requests": DraRequest,
        "config": DraConfig,
        "results": DraResult,
        "allocation_config": DraConfig,
    },
    DraClaimTemplate: {"requests": DraRequest, "config": DraConfig},
    DraDeviceClass: {"config": DraConfig},
    DraSlice: {"devices": DraDevice},
    AdmissionPolicy: {"scopes": AdmissionScope},
    Role: {"rules": PolicyRule},
    RoleBinding: {"subjects": Subject},
}
_SCALARS = (str, int, float, bool, type(None))


@functools.cache
def _field_names(cls: type) -> tuple[str, ...] | None:
    """The field names of a dataclass type, None for any other type."""
    return tuple(f.name for f in fields(cls)) if is_dataclass(cls) else None


def to_dict(obj: Any) -> dict[str, Any]:
    """A JSON-ready dict of any snapshot dataclass (tuples become lists, so the dict equals
    what a JSON column gives back and unchanged objects compare equal)."""
    return _jsonable(obj)


def _jsonable(value: Any) -> Any:
    if isinstance(value, _SCALARS):
        return value
    names = _field_names(type(value))
    if names is not None:
        return {name: _jsonable(getattr(value, name)) for name in names}
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


def _fields_of(obj: Any) -> dict[str, Any]:
    names = _field_names(type(obj))
    if names is None:
        raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")
    # Named fields rather than vars(obj): a cached property would add keys to __dict__.
    return {name: getattr(obj, name) for name in names}


# The encoder walks the dataclasses itself (default=) and writes tuples as arrays, so the text
# equals json.dumps(to_dict(obj), sort_keys=True) without building the dict first.
_CANONICAL = json.JSONEncoder(sort_keys=True, check_circular=False, default=_fields_of)


def to_json(obj: Any) -> str:
    """to_dict(obj) as canonical JSON text (keys sorted): what sync hashes and stores."""
    return _CANONICAL.encode(obj)


def from_dict(cls: type, data: dict[str, Any]) -> Any:
    """Rebuild a snapshot dataclass from to_dict() output, ignoring unknown keys."""
    return _builder(cls)(data)


@functools.cache
def _builder(cls: type) -> Callable[[dict[str, Any]], Any]:
    nested = {name: _builder(kind) for name, kind in _NESTED.get(cls, {}).items()}
    plan = [(f.name, nested.get(f.name), f.default, f.default_factory) for f in fields(cls)]
    # Our classes have no __post_init__, so filling __dict__ directly makes the same object as
    # __init__ without its per-field object.__setattr__ calls (the classes are frozen).
    direct = not hasattr(cls, "__post_init__") and not hasattr(cls, "__slots__")

    def build(data: dict[str, Any]) -> Any:
        values: dict[str, Any] = {}
        complete = True
        for name, inner, default, factory in plan:
            if name in data:
                value = data[name]
                if inner is not None:
                    value = tuple([inner(item) for item in value or ()])
                elif isinstance(value, list):
                    value = tuple([tuple(v) if isinstance(v, list) else v for v in value])
                values[name] = value
            elif default is not MISSING:
                values[name] = default
            elif factory is not MISSING:
                values[name] = factory()
            else:
                complete = False
        if not complete:  # a required field is missing: the dataclass raises its own TypeError
            return cls(**{k: v for k, v in values.items() if k in data})
        if not direct:
            return cls(**values)
        obj = object.__new__(cls)
        obj.__dict__.update(values)
        return obj

    return build


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many acyclic objects (a parsed
    snapshot, its dataclasses, rows): with it running, every 700 allocations trigger a pass
    and whole-heap passes recur as the heap grows, which triples the time of json.loads on a
    large cluster. Only re-enables what it disabled, so nesting and threads are safe."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
