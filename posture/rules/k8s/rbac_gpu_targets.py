"""What K8S-004 guards: the GPU sharing configuration as read, and what stands in for the part
of it the snapshot did not hold. PURE.

A snapshot made with `kubectl get` holds only the kinds it asked for: a cluster running the GPU
Operator whose ClusterPolicy was not asked for still has one (the operator does nothing
without it), and a cluster whose sharing ConfigMaps were not read may still have them. A
tenant that may write them is reported all the same, with what was not seen said
(`target_seen` false), rather than nothing."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from inventory.drift import is_gpu_component
from inventory.snapshot import ClusterSnapshot
from inventory.sources.gpu_config import config_purpose
from inventory.sources.stack_namespaces import operator_namespaces as gpu_operator_namespaces
from posture.inputs import PostureInputs
from posture.rules.k8s.rbac_targets import Target
from posture.rules.k8s.vendor_config_targets import vendor_config_targets

# The vGPU Device Manager's config decides which vGPU types, and so how many VMs, each GPU of a
# vm-vgpu node is split into: sharing configuration as much as the device plugin's.
SHARING_CONFIGMAP_PURPOSES = ("device_plugin", "mig_parted", "vgpu_device_manager")
# Whose reading shows the container sharing configuration was read: without one, the stack's
# namespaces are stood in for (a vGPU config alone says nothing of the device plugin's).
_CONTAINER_SHARING = ("device_plugin", "mig_parted")
OPERATOR_GROUP, OPERATOR_RESOURCE = "nvidia.com", "clusterpolicies"
DRIVER_RESOURCE = "nvidiadrivers"

UNSEEN_CONFIG = (
    "no ClusterPolicy or device-plugin/MIG ConfigMap was seen: which of these ConfigMaps "
    "configure GPU sharing is unknown"
)
UNSEEN_CONFIGMAPS = (
    "no device-plugin/MIG ConfigMap was seen: which of these ConfigMaps configure GPU sharing "
    "is unknown"
)
UNSEEN_POLICY = (
    "the GPU Operator runs in namespace {namespaces} but no ClusterPolicy was in the snapshot: "
    "add clusterpolicies.nvidia.com to `kubectl get`"
)
UNMOUNTED = (
    "counted as the device plugin's config although no plugin in the snapshot mounts it and "
    "no ClusterPolicy names it: a key of it shares GPUs and a GPU node's "
    "nvidia.com/device-plugin.config label selects that key (fail closed: the plugin's "
    "DaemonSet may simply be missing from the snapshot)"
)
# The GPU-stack components that take their configuration from ConfigMaps they mount or read,
# and the purpose of such a ConfigMap (the device plugin's config-manager runs its image).
READER_NAMES = {
    "device_plugin": "NVIDIA device plugin",
    "mig_parted": "NVIDIA MIG Manager",
    "vgpu_device_manager": "NVIDIA vGPU Device Manager",
}
# Every pod mounts it (the service-account token's projected volume); its controller rewrites it.
ROOT_CA = "kube-root-ca.crt"
MOUNTED = (
    "{reader} runs the {component} and reads this ConfigMap (a volume or its environment) as "
    "its config: whoever writes it steers how the node's GPUs are shared, whatever namespace "
    "it is in"
)
NO_OPERATOR = (
    "neither the GPU Operator nor a ClusterPolicy was seen: the grant names NVIDIA's "
    "resources, which take effect wherever the operator is installed"
)

ReadBy = dict[tuple[str, str], tuple[str, str]]  # (namespace, ConfigMap) -> (purpose, why)


def gpu_config_targets(snapshot: ClusterSnapshot) -> list[Target]:
    """What decides how GPUs are shared, as read: the device-plugin, MIG and vGPU Device
    Manager ConfigMaps and the GPU Operator's ClusterPolicy."""
    targets = [
        Target("ConfigMap", "", "configmaps", cm.namespace, cm.name, cm.purpose)
        for cm in sorted(snapshot.configmaps, key=lambda c: (c.namespace, c.name))
        if cm.purpose in SHARING_CONFIGMAP_PURPOSES
    ]
    targets += [
        Target("ClusterPolicy", OPERATOR_GROUP, OPERATOR_RESOURCE, None, p.name, "gpu_operator")
        for p in sorted(snapshot.gpu_operator_policies, key=lambda p: p.name)
    ]
    if snapshot.gpu_operator_policies:
        # The operator installs the NVIDIADriver CRD with the ClusterPolicy's: an NVIDIADriver
        # picks the driver image its node pool runs (the snapshot does not read them).
        targets.append(
            Target("NVIDIADriver", OPERATOR_GROUP, DRIVER_RESOURCE, None, None, "gpu_operator")
        )
    return targets


def k8s004_targets(inputs: PostureInputs) -> list[Target]:
    """gpu_config_targets, and stand-ins for what the snapshot did not hold: the ClusterPolicy
    (and NVIDIADriver) of a GPU Operator seen running, or, operator unseen, those resources as
    named by a rule (low: they may not exist); and, with no sharing ConfigMap read, the
    ConfigMaps of the GPU stack's namespaces (no tenant's), whoever writes which still steers
    it, whether or not a ClusterPolicy was read."""
    snapshot = inputs.snapshot
    platform = inputs.platform_namespaces
    read = _stack_read_configmaps(snapshot, tenants=set(inputs.namespace_owner))
    # A sharing ConfigMap outside the platform's namespaces was kept only as the one a node's
    # label selects with no plugin seen (inventory.sources.unmounted_config): say why, unless
    # a plugin outside the platform's namespaces is seen reading it after all.
    configs = gpu_config_targets(snapshot)
    targets = [_outside_platform(t, platform, read) for t in configs]
    # Any other ConfigMap the device plugin or MIG Manager reads, wherever it runs (a tenant's
    # namespace excepted): gpu_config keeps only the platform's as the configuration in force,
    # but whoever may write one steers that component all the same (fail closed).
    have = {(t.namespace, t.name) for t in targets if t.kind == "ConfigMap"}
    targets += [
        Target("ConfigMap", "", "configmaps", ns, name, purpose, why=why)
        for (ns, name), (purpose, why) in sorted(read.items())
        if (ns, name) not in have
    ]
    if not snapshot.gpu_operator_policies:
        targets += _operator_stand_ins(snapshot)
    # AMD's DeviceConfig and Intel's GpuDevicePlugin: the same configuration, other vendors'.
    targets += vendor_config_targets(snapshot)
    # The stand-in for sharing ConfigMaps not read is kept by what was read of them alone: a
    # ConfigMap a plugin is seen to mount never narrows it to that one.
    if not any(t.purpose in _CONTAINER_SHARING for t in configs):
        stack = {w.namespace for w in snapshot.workloads if is_gpu_component(w)}
        stack -= set(inputs.namespace_owner)
        # Nothing of the configuration read at all: the older wording, which says so.
        unseen = UNSEEN_CONFIGMAPS if snapshot.gpu_operator_policies else UNSEEN_CONFIG
        targets += [
            Target("ConfigMap", "", "configmaps", ns, None, "gpu_stack", unseen=unseen)
            for ns in sorted(stack)
        ]
    return targets


def _outside_platform(target: Target, platform: frozenset[str], read: ReadBy) -> Target:
    if target.kind != "ConfigMap" or target.namespace in platform:
        return target
    if (target.namespace, target.name) in read:
        return replace(target, why=read[(target.namespace, target.name)][1])
    return replace(target, why=UNMOUNTED) if target.purpose == "device_plugin" else target


def _stack_read_configmaps(snapshot: ClusterSnapshot, *, tenants: set[str]) -> ReadBy:
    """The ConfigMaps that a device plugin or MIG Manager mounts or reads, by its controller
    (else, its controller not in the snapshot, by its pod), outside tenants' namespaces: a
    tenant's own plugin is its own business, not another's config to steer."""
    found: ReadBy = {}
    for workload in sorted(snapshot.workloads, key=lambda w: (w.namespace, w.kind, w.name)):
        reader = _reader(workload.images.values())
        if reader is None or workload.namespace in tenants:
            continue
        where = f"{workload.kind} {workload.namespace}/{workload.name}"
        for name in workload.config_refs:
            _add(found, workload.namespace, name, reader, where)
    # Only the stack's pods are sorted (a cluster runs tens of thousands of others).
    readers = [
        (pod, reader)
        for pod in snapshot.pods
        if pod.namespace not in tenants
        and (reader := _reader(c.image for c in pod.containers)) is not None
    ]
    for pod, reader in sorted(readers, key=lambda found: (found[0].namespace, found[0].name)):
        for volume in pod.volumes:
            if volume.kind == "configMap" and volume.config_map:
                _add(
                    found,
                    pod.namespace,
                    volume.config_map,
                    reader,
                    f"pod {pod.namespace}/{pod.name}",
                )
    return found


def _reader(images: Iterable[str]) -> tuple[str, str] | None:
    """(purpose, component) of the first config-reading GPU-stack component among `images`."""
    return next(
        ((p, READER_NAMES[p]) for i in images if (p := config_purpose(i)) in READER_NAMES), None
    )


def _add(found: ReadBy, namespace: str, name: str, reader: tuple[str, str], where: str) -> None:
    if name != ROOT_CA and (namespace, name) not in found:
        purpose, component = reader
        found[(namespace, name)] = (purpose, MOUNTED.format(reader=where, component=component))


def _operator_stand_ins(snapshot: ClusterSnapshot) -> list[Target]:
    operator = gpu_operator_namespaces(snapshot.workloads, snapshot.bindings)
    # Running, its ClusterPolicy exists by whatever name (the chart's is cluster-policy). Not
    # seen, the CRDs may be installed without an operator running, or the snapshot left out
    # its Deployment: only a rule naming NVIDIA's group or these resources is a grant on them
    # (a wildcard says nothing about them), and it is said low.
    unseen = UNSEEN_POLICY.format(namespaces=", ".join(sorted(operator))) if operator else ""
    return [
        Target(
            kind,
            OPERATOR_GROUP,
            resource,
            None,
            None,
            "gpu_operator",
            unseen=unseen or NO_OPERATOR,
            any_name=True,
            explicit=not operator,
            severity="" if operator else "low",
        )
        for kind, resource in (
            ("ClusterPolicy", OPERATOR_RESOURCE),
            ("NVIDIADriver", DRIVER_RESOURCE),
        )
    ]
