"""What K8S-004 guards: the GPU sharing configuration as read, and what stands in for the part
of it the snapshot did not hold. PURE.

A snapshot made with `kubectl get` holds only the kinds it asked for: a cluster running the GPU
Operator whose ClusterPolicy was not asked for still has one (the operator does nothing
without it), and a cluster whose sharing ConfigMaps were not read may still have them. A
tenant that may write them is reported all the same, with what was not seen said
(`target_seen` false), rather than nothing."""

from __future__ import annotations

from dataclasses import replace

from inventory.drift import is_gpu_component
from inventory.snapshot import ClusterSnapshot
from inventory.sources.gpu_config import operator_namespaces as gpu_operator_namespaces
from posture.inputs import PostureInputs
from posture.rules.k8s.rbac_targets import Target

SHARING_CONFIGMAP_PURPOSES = ("device_plugin", "mig_parted")
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
NO_OPERATOR = (
    "neither the GPU Operator nor a ClusterPolicy was seen: the grant names NVIDIA's "
    "resources, which take effect wherever the operator is installed"
)


def gpu_config_targets(snapshot: ClusterSnapshot) -> list[Target]:
    """What decides how GPUs are shared, as read: the device-plugin and MIG ConfigMaps and
    the GPU Operator's ClusterPolicy."""
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
    # A sharing ConfigMap outside the platform's namespaces was kept only as the one a node's
    # label selects with no plugin seen (inventory.sources.unmounted_config): say why.
    targets = [
        replace(t, why=UNMOUNTED)
        if t.kind == "ConfigMap" and t.purpose == "device_plugin" and t.namespace not in platform
        else t
        for t in gpu_config_targets(snapshot)
    ]
    if not snapshot.gpu_operator_policies:
        targets += _operator_stand_ins(snapshot)
    if not any(t.purpose in SHARING_CONFIGMAP_PURPOSES for t in targets):
        stack = {w.namespace for w in snapshot.workloads if is_gpu_component(w)}
        stack -= set(inputs.namespace_owner)
        # Nothing of the configuration read at all: the older wording, which says so.
        unseen = UNSEEN_CONFIGMAPS if snapshot.gpu_operator_policies else UNSEEN_CONFIG
        targets += [
            Target("ConfigMap", "", "configmaps", ns, None, "gpu_stack", unseen=unseen)
            for ns in sorted(stack)
        ]
    return targets


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
