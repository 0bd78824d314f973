"""Which changes of a GPU node's labels and taints are DRIFT-003, between two good syncs. PURE.

Only what steers tenants into or out of a pool counts: labels a person or the platform sets
and taints that keep pods off. Labels discovery rewrites (GFD, NFD), the GPU Operator's upgrade
bookkeeping and the taints of a node's life cycle (cordon, pressure, autoscaler removal) change
on every node at once through an upgrade and move no tenant; the sharing labels are DRIFT-001,
except `nvidia.com/device-plugin.config` where the node's device plugin does not read it (it runs
without config-manager): a change of it there shares no GPU differently, so it is a label change.
"""

from __future__ import annotations

from typing import Any

from inventory import snapshot as snap
from tenants.pool_taints import SEPARATING_EFFECTS, PoolTaintRules

# Labels GPU Feature Discovery rewrites on every pass: never a configuration change.
VOLATILE_LABEL_SUFFIXES = ("timestamp", "mig.config.state")
# Labels that report what a node is or where it is in an upgrade, written by discovery (GFD,
# NFD) or the GPU Operator's upgrade controller: they follow a driver or kernel upgrade or a
# newer GFD on every node at once and steer no tenant into or out of a pool. A driver or
# operator change is DRIFT-002 on its DaemonSet; a MIG layout (`nvidia.com/mig-<profile>.*`)
# DRIFT-001 through `nvidia.com/mig.config`.
DISCOVERED_LABEL_PREFIXES = (
    "feature.node.kubernetes.io/",  # Node Feature Discovery
    "nvidia.com/cuda.",
    "nvidia.com/gfd.",
    "nvidia.com/gpu.compute.",
    "nvidia.com/gpu.family",
    "nvidia.com/gpu.memory",
    "nvidia.com/gpu.count",
    "nvidia.com/gpu.machine",
    "nvidia.com/gpu.mode",
    "nvidia.com/gpu.clique",
    "nvidia.com/gpu.imex-domain",
    "nvidia.com/mps.capable",
    "nvidia.com/mig.capable",
    "nvidia.com/mig-",
    "nvidia.com/vgpu.",
    "nvidia.com/gpu-driver-upgrade",  # -state: upgrade-required, cordon-required, ... done
)
# MIG Manager sets `nvidia.com/gpu.deploy.<operand>=paused-for-mig-change` while it
# repartitions, then puts the value back: the operand is still deployed.
PAUSED_PREFIX = "paused-"
# Taints Kubernetes, cloud controllers and autoscalers put on and take off as a node is
# cordoned (a driver upgrade drains nodes), under pressure, starting or being removed: none
# names a tenant class, so none moves a node between pools.
LIFECYCLE_TAINT_PREFIXES = (
    "node.kubernetes.io/",
    "node.cloudprovider.kubernetes.io/",
    "ToBeDeletedByClusterAutoscaler",
    "DeletionCandidateOfClusterAutoscaler",
    "karpenter.sh/disrupt",  # disruption (v0.3x), disrupted (v1)
    "karpenter.sh/unregistered",
    "cloud.google.com/impending-node-termination",
)
PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
UNREAD_NOTE = (
    "the node's device plugin runs without config-manager and does not read "
    f"{PLUGIN_CONFIG_LABEL}: the change shares no GPU differently"
)
SHARING_LABELS = (
    "nvidia.com/gpu.sharing-strategy",
    "nvidia.com/gpu.replicas",
    "nvidia.com/mig.strategy",
    "nvidia.com/mig.config",
    "nvidia.com/device-plugin.config",
    "nvidia.com/gpu.product",
)


def plugin_label_unread(old: snap.Node, new: snap.Node) -> bool:
    """Whether the node's device plugin ignored its device-plugin.config label at either sync
    (seen running without config-manager): a change of that label is then no sharing change
    (what the plugin reads in its place is compared as the config in force, DRIFT-001)."""
    return old.device_plugin_label_read is False or new.device_plugin_label_read is False


def _stable_labels(node: snap.Node, unread: bool = False) -> dict[str, str]:
    return {
        k: "true" if k.startswith("nvidia.com/gpu.deploy.") and v.startswith(PAUSED_PREFIX) else v
        for k, v in node.labels.items()
        if not k.endswith(VOLATILE_LABEL_SUFFIXES)
        and (k not in SHARING_LABELS or (unread and k == PLUGIN_CONFIG_LABEL))
        and not k.startswith(DISCOVERED_LABEL_PREFIXES)
    }


def _stable_taints(node: snap.Node) -> list[str]:
    return sorted(
        f"{t.key}={t.value}:{t.effect}"
        for t in node.taints
        if not t.key.startswith(LIFECYCLE_TAINT_PREFIXES)
    )


def label_taint_diff(old: snap.Node, new: snap.Node) -> dict[str, dict[str, Any]] | None:
    unread = plugin_label_unread(old, new)
    before_labels, after_labels = _stable_labels(old, unread), _stable_labels(new, unread)
    keys = {
        k
        for k in before_labels.keys() | after_labels.keys()
        if before_labels.get(k) != after_labels.get(k)
    }
    old_taints, new_taints = _stable_taints(old), _stable_taints(new)
    if not keys and old_taints == new_taints:
        return None
    before: dict[str, Any] = {}
    after: dict[str, Any] = {}
    if keys:
        before["labels"] = {k: before_labels.get(k) for k in sorted(keys)}
        after["labels"] = {k: after_labels.get(k) for k in sorted(keys)}
        if PLUGIN_CONFIG_LABEL in keys:
            after["note"] = UNREAD_NOTE
    if old_taints != new_taints:
        before["taints"], after["taints"] = old_taints, new_taints
    return {"before": before, "after": after}


def class_taints(node: snap.Node, rules: PoolTaintRules) -> frozenset[str]:
    """The node's taints that mark a trust-class pool (DESIGN §3): a separating taint under a
    key of GPUPOSTURE_POOL_TAINT_KEYS, whatever class its value names, or a class's exact taint."""
    return frozenset(
        f"{t.key}={t.value}:{t.effect}"
        for t in node.taints
        if (t.key in rules.keys and t.effect in SEPARATING_EFFECTS)
        or rules.classes_of(t.key, t.value, t.effect)
    )
