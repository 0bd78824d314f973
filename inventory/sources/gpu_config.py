"""Which ConfigMaps are the GPU stack's own configuration, and reading them. PURE.

Only the configuration the GPU stack actually uses decides how nodes share their GPUs
(DESIGN §3, "Fail closed"). Where the snapshot shows it, that is the ConfigMap the GPU
Operator's ClusterPolicy names (`spec.devicePlugin.config.name`, `spec.migManager.config.name`)
in the operator's namespace, or one the device plugin's or MIG Manager's DaemonSet mounts or
reads, in a platform namespace. Where it shows neither, any ConfigMap in a platform namespace
whose content is such a config may be it. A ConfigMap anywhere else (a tenant's namespace, an
unclassified one) is never GPU configuration: it is not even parsed.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
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
from inventory.sources.configs import (
    DEVICE_PLUGIN,
    MIG_PARTED,
    read_configmap,
    unreadable_configs,
)
from inventory.sources.gpu_operator import DEFAULT_MIG_PARTED_CONFIGMAP
from inventory.sources.images import component_of, image_version
from inventory.sources.stack_operators import (
    cluster_bound_namespaces,
    controllers_of_pods,
    kubevirt_namespaces,
    network_operator_namespaces,
    operator_deployment_namespaces,
    repository_name,
)
from inventory.sources.unmounted_config import unmounted_plugin_configmaps
from inventory.sources.vendor_stacks import vendor_stack_namespaces
from tenants.mapping import TENANT_LABEL, platform_namespaces

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

    def purposes(self, namespace: str, name: str) -> tuple[str, ...]:
        """The kinds of GPU config this platform ConfigMap may be."""
        return tuple(
            purpose
            for purpose in (DEVICE_PLUGIN, MIG_PARTED)
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
) -> GpuConfigs:
    """Read the GPU stack's ConfigMaps among `configmaps`; one that cannot be read is skipped
    with a warning, never an error for the whole snapshot. `node_keys`: the device-plugin
    config keys GPU nodes' labels select (unmounted_config)."""
    bindings, namespaces, configmaps = list(bindings), list(namespaces), list(configmaps)
    tenant_namespaces = list(tenant_namespaces)
    operator = operator_namespaces(workloads, bindings)
    platform = platform_namespaces(
        namespace_labels={ns.name: ns.labels for ns in namespaces},
        operator_namespaces=stack_namespaces(workloads, bindings, pods),
        configured=configured_platform,
        tenant_namespaces=tenant_namespaces,
    )
    result = GpuConfigs(platform=platform)
    references = stack_references(workloads, policies, platform, operator & platform)
    for raw in configmaps:
        purposes = references.purposes(raw.namespace, raw.name) if raw.namespace in platform else ()
        if purposes:
            _read_one(result, raw, purposes, references.stated.get((raw.namespace, raw.name)))
    if DEVICE_PLUGIN not in references.shown:
        # No plugin seen reading a config: a sharing config a node's label selects, outside
        # the platform's and the tenants' namespaces, is who may steer sharing (fail closed).
        claimed = {ns.name for ns in namespaces if ns.labels.get(TENANT_LABEL)}
        skipped = platform | claimed | set(tenant_namespaces)
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


# The GPU-stack components the operator deploys as DaemonSets in its own namespace.
OPERAND_COMPONENTS = frozenset(
    {"device_plugin", "container_toolkit", "driver", "dcgm_exporter", "mig_manager"}
)


def operator_namespaces(
    workloads: Iterable[Workload], bindings: Iterable[RoleBinding] | None = None
) -> frozenset[str]:
    """Where the GPU Operator runs: the namespaces of Deployments running its image that a
    ClusterRoleBinding names (one of their service accounts), or that also run the operator's
    operands (DaemonSets of the device plugin, toolkit, driver, DCGM exporter or MIG manager,
    which the operator creates in its own namespace). Anyone who may create a Deployment can run
    the operator's image, even at zero replicas, and a namespace found here becomes the
    platform's, unjudged: the image alone proves nothing where RBAC was read. Where a hand-made
    snapshot holds some bindings but not the operator's, its operands still place it, rather
    than every platform DaemonSet being judged as a tenant's pods. With no ClusterRoleBinding
    in `bindings` at all (the snapshot did not read RBAC; a cluster always has some), the image
    alone decides, as it must."""
    return operator_deployment_namespaces(
        workloads,
        bindings,
        is_operator=lambda image: component_of(image) == "gpu_operator",
        is_operand=lambda image: component_of(image) in OPERAND_COMPONENTS,
    )


def stack_namespaces(
    workloads: Iterable[Workload],
    bindings: Iterable[RoleBinding] | None = None,
    pods: Iterable[Pod] = (),
) -> frozenset[str]:
    """The GPU stack's namespaces as found: the GPU Operator's (operator_namespaces), the NVIDIA
    Network Operator's (network_operator_namespaces), KubeVirt's and CDI's, which hand the
    sandbox nodes' GPUs and vGPUs to VMs (kubevirt_namespaces), those of the two things that hand
    GPUs to pods without the GPU Operator, the NVIDIA DRA driver and a standalone device plugin
    (its chart's own namespace), where a ClusterRoleBinding names one of their service accounts
    (the DRA kubelet plugin publishes ResourceSlices, the plugin's config manager and GFD read
    nodes: their charts bind one), or where the snapshot read no ClusterRoleBinding at all.
    Their image alone, which anyone may run, places nothing. A Deployment or DaemonSet the
    snapshot did not read is seen in its `pods` (controllers_of_pods), on the same terms."""
    workloads = list(workloads)
    workloads += controllers_of_pods(workloads, pods)
    bindings = list(bindings or ())
    bound = cluster_bound_namespaces(bindings)
    handing = {
        w.namespace
        for w in workloads
        if w.kind in ("DaemonSet", "Deployment")
        and any(_hands_out_gpus(image) for image in w.images.values())
        and (bound is None or w.namespace in bound)
    }
    return (
        operator_namespaces(workloads, bindings)
        | handing
        | _standalone(workloads, bindings)
        | network_operator_namespaces(workloads, bindings)
        | kubevirt_namespaces(workloads, bindings)
        | vendor_stack_namespaces(workloads, bindings)  # AMD's, named as NVIDIA's
    )


# NVIDIA's node agents that hand out no GPU but are deployed by their own charts outside the
# operator (dcgm-exporter in e.g. `gpu-monitoring`, MIG Manager, the older standalone GPU
# Feature Discovery image), by the last segment of their image repository.
STANDALONE_IMAGES = frozenset({"dcgm-exporter", "k8s-mig-manager", "gpu-feature-discovery"})


def _standalone(workloads: list[Workload], bindings: list[RoleBinding]) -> set[str]:
    """Namespaces of a DaemonSet running one of STANDALONE_IMAGES from NVIDIA's registry
    (nvcr.io/nvidia/...), where its chart's RBAC is there: a ClusterRoleBinding, or a
    RoleBinding in the namespace naming one of its service accounts (dcgm-exporter's chart
    always binds its `dcgm-exporter-read-cm` Role so, and a ClusterRole only with pod labels
    on), or where the snapshot read no ClusterRoleBinding (as for the others). A tenant's
    namespace stays the tenant's (platform_namespaces drops it whatever says so)."""
    cluster = cluster_bound_namespaces(bindings)
    local = {
        b.namespace
        for b in bindings
        if b.kind == "RoleBinding"
        and any(
            s.kind == "ServiceAccount" and s.namespace in (None, b.namespace) for s in b.subjects
        )
    }
    return {
        w.namespace
        for w in workloads
        if w.kind == "DaemonSet"
        and any(_nvidia_standalone(image) for image in w.images.values())
        and (cluster is None or w.namespace in cluster | local)
    }


def _nvidia_standalone(image: str) -> bool:
    repository, _ = image_version(image)
    return repository.startswith("nvcr.io/nvidia/") and repository_name(image) in STANDALONE_IMAGES


def _hands_out_gpus(image: str) -> bool:
    # The NVIDIA DRA driver (images.COMPONENTS names its images, old and new) or the plugin.
    return component_of(image) in ("dra_driver", "device_plugin")


def stack_references(
    workloads: Iterable[Workload],
    policies: Iterable[GpuOperatorPolicy],
    platform: Collection[str],
    operator: Collection[str],
) -> StackReferences:
    """The ConfigMaps the GPU stack names: a ClusterPolicy's in the operator's namespace (in
    every platform namespace when the snapshot has no operator Deployment), and those that a
    device-plugin or MIG Manager DaemonSet in a platform namespace mounts or reads."""
    references = StackReferences()
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
        for purpose in {_READERS.get(component_of(i) or "") for i in workload.images.values()}:
            if purpose is not None:
                references.shown.add(purpose)
                for name in workload.config_refs:
                    references.add(purpose, workload.namespace, name)
    return references


def _policy_names(spec: Mapping[str, Any]) -> dict[str, str]:
    """purpose -> the ConfigMap a ClusterPolicy (its parsed spec) names for it. An empty
    device-plugin name means the plugin runs without one; MIG Manager then reads its default."""
    names = {MIG_PARTED: str(spec.get("mig_manager_config_name") or DEFAULT_MIG_PARTED_CONFIGMAP)}
    names[DEVICE_PLUGIN] = str(spec.get("device_plugin_config_name") or "")
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
    """A device-plugin config the ClusterPolicy names that is in no platform namespace of the
    snapshot: its settings are unknown, which the operator should hear about."""
    stated = {name for (_, name), purpose in references.stated.items() if purpose == DEVICE_PLUGIN}
    found = {name for (ns, name) in present if (ns, name) in references.stated}
    return [
        f"the GPU Operator's ClusterPolicy names device-plugin config ConfigMap {name!r}, which "
        "is in no platform namespace of the snapshot: its sharing settings are unknown (the "
        "operator's namespace is found from its Deployment; otherwise label it "
        "gpuposture.io/platform=true or list it in GPUPOSTURE_PLATFORM_NAMESPACES)"
        for name in sorted(stated - found)
        if name
    ]
