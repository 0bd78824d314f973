"""Which ConfigMaps are the GPU stack's own configuration, and reading them. PURE.

Only the configuration the GPU stack actually uses decides how nodes share their GPUs
(DESIGN §3, "Fail closed"). Where the snapshot shows it, that is the ConfigMap the GPU
Operator's ClusterPolicy names (`spec.devicePlugin.config.name`, `spec.migManager.config.name`,
`spec.vgpuDeviceManager.config.name`) in the operator's namespace, or one the device plugin's,
MIG Manager's or vGPU Device Manager's DaemonSet mounts or reads, in a platform namespace.
Where it shows neither, any ConfigMap in a platform namespace whose content is such a config
may be it. A ConfigMap anywhere else (a tenant's namespace, an unclassified one) is never GPU
configuration: it is not even parsed.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from inventory.snapshot import (
    ConfigMap,
    GpuOperatorPolicy,
    Namespace,
    Pod,
    RoleBinding,
    SharingConfig,
    UnreadableConfig,
    Workload,
)
from inventory.sources.config_fallback import (
    matched_configs,
    mig_fallback_warnings,
    operator_readers_unnamed,
    unnamed_why,
)
from inventory.sources.configs import (
    DEVICE_PLUGIN,
    MIG_PARTED,
    VGPU_DEVICE_MANAGER,
    read_configmap,
    unreadable_configs,
)
from inventory.sources.gpu_operator import (
    DEFAULT_MIG_PARTED_CONFIGMAP,
    DEFAULT_VGPU_DEVICES_CONFIGMAP,
)
from inventory.sources.images import component_of, is_vgpu_device_manager
from inventory.sources.plugin_reach import GpuNode, unreached, unreached_warning
from inventory.sources.stack_namespaces import (
    find_stack_namespaces,
    operator_namespaces,
    refused_warnings,
)
from inventory.sources.unmounted_config import unmounted_plugin_configmaps
from tenants.mapping import claimed_namespaces, platform_namespaces

# The DaemonSets whose configuration is a ConfigMap, by the component their image runs (GPU
# Feature Discovery ships in the device plugin's image and reads the same config).
_READERS = {"device_plugin": DEVICE_PLUGIN, "mig_manager": MIG_PARTED}


@dataclass(frozen=True)
class RawConfigMap:
    namespace: str
    name: str
    data: Any


@dataclass
class GpuConfigs:
    """The GPU configuration of one snapshot."""

    platform: frozenset[str]
    # The namespaces tenants claim (the registry's, and those labelled gpuposture.io/tenant).
    claimed: frozenset[str] = frozenset()
    configmaps: list[ConfigMap] = field(default_factory=list)
    sharing_configs: list[SharingConfig] = field(default_factory=list)
    unreadable: list[UnreadableConfig] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


@dataclass
class StackReferences:
    """What the GPU stack says its configuration is: per purpose, whether the snapshot shows
    it at all, and the (namespace, name) of each ConfigMap it names."""

    shown: set[str] = field(default_factory=set)
    named: dict[str, set[tuple[str, str]]] = field(default_factory=dict)
    stated: dict[tuple[str, str], str] = field(default_factory=dict)  # by the ClusterPolicy
    # purpose -> the GPU Operator's DaemonSets that name no ConfigMap, with no ClusterPolicy
    # read: they show no config of their own (config_fallback)
    unnamed: dict[str, list[str]] = field(default_factory=dict)
    # purpose -> the warning that its DaemonSets leave GPU nodes unreached (plugin_reach)
    unreached: dict[str, str] = field(default_factory=dict)

    def purposes(self, namespace: str, name: str) -> tuple[str, ...]:
        """The kinds of GPU config this platform ConfigMap may be."""
        return tuple(
            purpose
            for purpose in (DEVICE_PLUGIN, MIG_PARTED, VGPU_DEVICE_MANAGER)
            if purpose not in self.shown or (namespace, name) in self.named.get(purpose, ())
        )

    def add(self, purpose: str, namespace: str, name: str) -> None:
        self.named.setdefault(purpose, set()).add((namespace, name))


def read_gpu_configs(
    configmaps: Iterable[RawConfigMap],
    *,
    workloads: Collection[Workload],
    policies: Collection[GpuOperatorPolicy],
    namespaces: Iterable[Namespace],
    configured_platform: Iterable[str] = (),
    tenant_namespaces: Iterable[str] = (),
    bindings: Iterable[RoleBinding] = (),
    node_keys: Collection[str] = (),
    pods: Iterable[Pod] = (),
    nodes: Sequence[GpuNode] = (),
) -> GpuConfigs:
    """Read the GPU stack's ConfigMaps among `configmaps`; one that cannot be read is skipped
    with a warning, never an error for the whole snapshot. `node_keys`: the device-plugin
    config keys GPU nodes' labels select (unmounted_config); `nodes`: the GPU nodes, which a
    DaemonSet's config references speak for only where it reaches them (plugin_reach)."""
    bindings, namespaces, configmaps, pods = (
        list(bindings),
        list(namespaces),
        list(configmaps),
        list(pods),
    )
    tenant_namespaces = list(tenant_namespaces)
    operator = operator_namespaces(workloads, bindings)
    stack = find_stack_namespaces(workloads, bindings, pods)
    platform = platform_namespaces(
        namespace_labels={ns.name: ns.labels for ns in namespaces},
        operator_namespaces=stack.found,
        configured=configured_platform,
        tenant_namespaces=tenant_namespaces,
    )
    claimed = claimed_namespaces(
        namespace_labels={ns.name: ns.labels for ns in namespaces},
        tenant_namespaces=tenant_namespaces,
    )
    result = GpuConfigs(platform=platform, claimed=claimed)
    result.warnings += refused_warnings(stack.refused, workloads, platform, claimed)
    references = stack_references(
        workloads, policies, platform, operator & platform, nodes=nodes, pods=pods
    )
    result.warnings += [references.unreached[p] for p in sorted(references.unreached)]
    for raw in configmaps:
        purposes = references.purposes(raw.namespace, raw.name) if raw.namespace in platform else ()
        if purposes:
            _read_one(result, raw, purposes, references.stated.get((raw.namespace, raw.name)))
    _mark_fallback(result, references, workloads, node_keys)
    if DEVICE_PLUGIN not in references.shown:
        # No plugin seen reading a config: a sharing config a node's label selects, outside
        # the platform's and the tenants' namespaces, is who may steer sharing (fail closed).
        skipped = platform | claimed
        found, warnings = unmounted_plugin_configmaps(configmaps, keys=node_keys, skipped=skipped)
        result.configmaps += found
        result.warnings += warnings
    result.warnings += _missing(references, {(c.namespace, c.name) for c in configmaps})
    result.warnings += _outside(workloads, platform)
    result.unreadable += [policy_unreadable(p) for p in policies if p.error]
    return result


def policy_unreadable(policy: GpuOperatorPolicy) -> UnreadableConfig:
    return UnreadableConfig("ClusterPolicy", "", policy.name, "", "gpu_operator", policy.error)


def _read_one(
    result: GpuConfigs, raw: RawConfigMap, purposes: tuple[str, ...], stated: str | None
) -> None:
    try:
        read = read_configmap(raw.namespace, raw.name, raw.data, purposes=purposes, stated=stated)
    except Exception as exc:  # noqa: BLE001 - one object we cannot read must not stop the sync
        result.warnings.append(
            f"ConfigMap {raw.namespace}/{raw.name} could not be read and was skipped: "
            f"{type(exc).__name__}: {exc}"
        )
        return
    if read.configmap is not None:
        result.configmaps.append(read.configmap)
        result.unreadable += unreadable_configs(read.configmap)
    result.sharing_configs.extend(read.sharing_configs)
    result.warnings.extend(read.warnings)


def stack_references(
    workloads: Iterable[Workload],
    policies: Iterable[GpuOperatorPolicy],
    platform: Collection[str],
    operator: Collection[str],
    *,
    nodes: Sequence[GpuNode] = (),
    pods: Sequence[Pod] = (),
) -> StackReferences:
    """The ConfigMaps the GPU stack names: a ClusterPolicy's in the operator's namespace (in
    every platform namespace when the snapshot has no operator Deployment), and those that a
    device-plugin or MIG Manager DaemonSet in a platform namespace mounts or reads. Such
    DaemonSets show their purpose's config only where, between them, they reach every GPU node
    of `nodes` (plugin_reach); their named ConfigMaps are read either way."""
    references = StackReferences()
    readers: dict[str, list[Workload]] = {}
    for policy in policies:
        if policy.error:
            continue  # nothing it says can be read: it shows no configuration
        for purpose, name in _policy_names(policy.spec).items():
            references.shown.add(purpose)
            for namespace in (operator or platform) if name else ():
                references.add(purpose, namespace, name)
                references.stated[(namespace, name)] = purpose
    for workload in workloads:
        if workload.kind != "DaemonSet" or workload.namespace not in platform:
            continue
        for purpose in {config_purpose(i) for i in workload.images.values()}:
            if purpose is not None and operator_readers_unnamed(workload, policies, operator):
                where = f"DaemonSet {workload.namespace}/{workload.name}"
                references.unnamed.setdefault(purpose, []).append(where)
            elif purpose is not None:
                readers.setdefault(purpose, []).append(workload)
                for name in workload.config_refs:
                    references.add(purpose, workload.namespace, name)
    for purpose, daemonsets in readers.items():
        # MIG Manager and the vGPU Device Manager run only on the nodes they configure: a node
        # they do not reach reads no such config at all, so only the plugin's reach counts.
        missed = unreached(daemonsets, nodes, pods) if purpose == DEVICE_PLUGIN else []
        if not missed:
            references.shown.add(purpose)
        elif purpose not in references.shown:  # a ClusterPolicy read shows it all the same
            names = [f"DaemonSet {ds.namespace}/{ds.name}" for ds in daemonsets]
            references.unreached[purpose] = unreached_warning(names, missed)
    return references


def config_purpose(image: str) -> str | None:
    """The kind of GPU config a container running `image` reads from a ConfigMap, if any."""
    if is_vgpu_device_manager(image):
        return VGPU_DEVICE_MANAGER
    return _READERS.get(component_of(image) or "")


def _mark_fallback(
    result: GpuConfigs,
    references: StackReferences,
    workloads: Collection[Workload],
    node_keys: Collection[str],
) -> None:
    """Where the GPU Operator's DaemonSets of a purpose name no ConfigMap and no ClusterPolicy
    is read, the configs read for it were matched without the ClusterPolicy: mark them and say
    so (config_fallback). Where the snapshot shows no such DaemonSet at all, the platform's
    configs stand as they always did (docs/clusters.md)."""
    for purpose in (DEVICE_PLUGIN, MIG_PARTED):
        if purpose in references.shown or not references.unnamed.get(purpose):
            continue
        why = unnamed_why(workloads, references.unnamed[purpose])
        if purpose == DEVICE_PLUGIN and result.sharing_configs:
            result.sharing_configs, warnings = matched_configs(
                result.sharing_configs, why, node_keys
            )
            result.warnings += warnings
        elif purpose == MIG_PARTED:
            mig = [(c.namespace, c.name) for c in result.configmaps if c.purpose == MIG_PARTED]
            result.warnings += mig_fallback_warnings(mig, why)


def _policy_names(spec: Mapping[str, Any]) -> dict[str, str]:
    """purpose -> the ConfigMap a ClusterPolicy (its parsed spec) names for it. An empty
    device-plugin name means the plugin runs without one; MIG Manager and the vGPU Device
    Manager then read their defaults."""
    names = {MIG_PARTED: str(spec.get("mig_manager_config_name") or DEFAULT_MIG_PARTED_CONFIGMAP)}
    names[DEVICE_PLUGIN] = str(spec.get("device_plugin_config_name") or "")
    # A ClusterPolicy stored before the name was read has no such key: the default then.
    vgpu = spec.get("vgpu_device_manager_config_name") or DEFAULT_VGPU_DEVICES_CONFIGMAP
    names[VGPU_DEVICE_MANAGER] = str(vgpu)
    return names


def _outside(workloads: Iterable[Workload], platform: Collection[str]) -> list[str]:
    """A device plugin or MIG Manager DaemonSet outside the platform namespaces: what it reads
    is not taken as the GPU configuration in force, which its operator should hear about (who
    may write it is judged all the same, K8S-004)."""
    return [
        f"DaemonSet {w.namespace}/{w.name} runs the NVIDIA device plugin or MIG Manager outside "
        "the platform namespaces: the ConfigMaps it reads are not taken as the GPU "
        "configuration in force, though who may write them is judged (K8S-004) "
        "(label its namespace gpuposture.io/platform=true or list it in "
        "GPUPOSTURE_PLATFORM_NAMESPACES if it is the platform's)"
        for w in workloads
        if w.kind == "DaemonSet"
        and w.namespace not in platform
        and any(component_of(i) in _READERS for i in w.images.values())
    ]


def _missing(references: StackReferences, present: set[tuple[str, str]]) -> list[str]:
    """A device-plugin config the ClusterPolicy names that the snapshot does not hold where the
    operator reads it: its settings are unknown, which the operator should hear about."""
    read_in: dict[str, set[str]] = {}
    for (namespace, name), purpose in references.stated.items():
        if purpose == DEVICE_PLUGIN and name:
            read_in.setdefault(name, set()).add(namespace)
    warnings = []
    for name, namespaces in sorted(read_in.items()):
        if any((ns, name) in present for ns in namespaces):
            continue
        elsewhere = sorted(ns for ns, other in present if other == name)
        where = (
            f"the snapshot holds a ConfigMap of that name only in {', '.join(elsewhere)}, "
            "which is not where the operator reads it"
            if elsewhere
            else "the snapshot holds no ConfigMap of that name (not exported, or not created)"
        )
        warnings.append(
            f"the GPU Operator's ClusterPolicy names device-plugin config ConfigMap {name!r} "
            f"(read in {', '.join(sorted(namespaces))}); {where}: its sharing settings are "
            "unknown (the operator's namespace is found from its Deployment; otherwise label it "
            "gpuposture.io/platform=true or list it in GPUPOSTURE_PLATFORM_NAMESPACES)"
        )
    return warnings
