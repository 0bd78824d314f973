"""GPU-relevant node labels whose value cannot be read (issue 17 item 2). PURE.

GPU Feature Discovery, the GPU Operator and MIG Manager write these labels with a small, known
set of values; so do GKE and Karpenter for the labels that stand in for GFD's on their nodes.
A value outside it (a count that is not a number, a sharing strategy or MIG state no component
writes) is not a fact we may replace by a default: the node says "unknown, could not read
<label>" (STACK-007, one check for everything that cannot be read), and whatever the label
decides is judged as unknown (a garbled sharing strategy makes the node's sharing `unknown`,
which the sharing checks treat as the weakest isolation)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from inventory.snapshot import LABEL_KIND, SharingConfig, UnreadableConfig
from inventory.sources.cloud_labels import (
    AUTO_GPU_COUNT,
    GKE_ACCELERATOR_COUNT,
    GKE_MAX_CLIENTS,
    GKE_SHARING,
    GKE_SHARING_MODES,
    KARPENTER_GPU_COUNT,
)
from inventory.sources.raw import as_int

NV = "nvidia.com/"
LABEL_PURPOSE = "gpu_label"
# What each component writes (GFD: sharing strategy, count, replicas; the GPU Operator: MIG
# strategy; MIG Manager: the state of a reconfiguration).
SHARING_STRATEGIES = ("none", "time-slicing", "mps")
MIG_STRATEGIES = ("none", "single", "mixed")
MIG_STATES = ("pending", "rebooting", "success", "failed")


def _count(minimum: int) -> Callable[[str], str | None]:
    def judge(value: str) -> str | None:
        number = as_int(value)
        if number is None:
            return "not an integer"
        return None if number >= minimum else f"below {minimum}"

    return judge


def _one_of(allowed: tuple[str, ...]) -> Callable[[str], str | None]:
    def judge(value: str) -> str | None:
        if value.strip().lower() in allowed:
            return None
        return f"not one of {', '.join(allowed)}"

    return judge


# label -> how its value is judged (an error, or None when it reads).
READERS: dict[str, Callable[[str], str | None]] = {
    NV + "gpu.count": _count(0),
    NV + "gpu.replicas": _count(1),
    NV + "gpu.sharing-strategy": _one_of(SHARING_STRATEGIES),
    NV + "mig.strategy": _one_of(MIG_STRATEGIES),
    NV + "mig.config.state": _one_of(MIG_STATES),
    # Managed clouds' labels that stand in for GFD's (cloud_labels.py): GKE's sharing, its
    # clients per GPU and physical count, Karpenter's count (and EKS Auto Mode's spelling).
    GKE_SHARING: _one_of(tuple(GKE_SHARING_MODES)),
    GKE_MAX_CLIENTS: _count(1),
    GKE_ACCELERATOR_COUNT: _count(0),
    KARPENTER_GPU_COUNT: _count(0),
    AUTO_GPU_COUNT: _count(0),
}


def unreadable_labels(labels: Mapping[str, str]) -> tuple[UnreadableConfig, ...]:
    """Each GPU label of the node whose value cannot be read, with what is wrong with it."""
    found = []
    # GFD's per-resource sharing label of each MIG profile (mixed strategy) reads like its
    # nvidia.com/gpu one.
    per_mig = {
        label: READERS[NV + "gpu.sharing-strategy"]
        for label in labels
        if label.startswith(NV + "mig-") and label.endswith(".sharing-strategy")
    }
    for label, judge in sorted({**READERS, **per_mig}.items()):
        if label not in labels:
            continue  # absent is not unreadable: the component may not run here
        value = str(labels[label])
        error = judge(value)
        if error:
            found.append(
                UnreadableConfig(
                    LABEL_KIND, "", label, "", LABEL_PURPOSE, f"value {value[:63]!r}: {error}"
                )
            )
    return tuple(found)


def sharing_label_garbled(labels: Mapping[str, str]) -> bool:
    """The sharing-strategy label is set to something GFD never writes."""
    value = labels.get(NV + "gpu.sharing-strategy")
    return value is not None and READERS[NV + "gpu.sharing-strategy"](value) is not None


PLUGIN_CONFIG = NV + "device-plugin.config"
DEFAULT_SOURCE = "devicePlugin.config.default"


def missing_plugin_config(
    labels: Mapping[str, str],
    configs: Sequence[SharingConfig],
    unreadable: Sequence[UnreadableConfig],
    default: str = "",
    *,
    default_from: tuple[str, str, str] | None = None,
) -> tuple[UnreadableConfig, ...]:
    """The node's `nvidia.com/device-plugin.config` label (else the explicit `default` the
    plugin is given: its config-manager's DEFAULT_CONFIG in the DaemonSet `default_from`
    (kind, namespace, name), else the GPU Operator's ClusterPolicy) when it names a config that no
    device-plugin ConfigMap of the snapshot has. The plugin's config-manager refuses a named
    config that does not exist ("specified config ... does not exist") rather than falling back:
    a new plugin pod does not start, a running one keeps whatever config it had. That config is
    not in the snapshot, so the node's sharing is unknown, never "none". Only where the cluster
    shows its device-plugin configs at all (with none, nothing reads the label)."""
    label = str(labels.get(PLUGIN_CONFIG) or "").strip()
    source = PLUGIN_CONFIG
    if not label and default:
        label, source = default, DEFAULT_SOURCE
    plugin = [p for p in unreadable if p.purpose == "device_plugin"]
    if not label or not (configs or plugin):
        return ()
    if any(c.key == label for c in configs) or any(p.key in (label, "") for p in plugin):
        return ()  # found, or its ConfigMap could not be read (unreadable_for says so)
    keys = ", ".join(sorted({c.key for c in configs} | {p.key for p in plugin})) or "none"
    error = (
        f"value {label[:63]!r}: no device-plugin config has that key (keys: {keys}); the "
        "plugin's config-manager refuses a config that does not exist, so the config in effect "
        "on this node is not in the snapshot"
    )
    if source != PLUGIN_CONFIG and default_from is not None:  # the DaemonSet names it
        kind, namespace, name = default_from
        error = f"env DEFAULT_CONFIG {error}"
        return (UnreadableConfig(kind, namespace, name, "", "device_plugin", error),)
    if source != PLUGIN_CONFIG:  # the ClusterPolicy names it: the object to fix
        return (UnreadableConfig("ClusterPolicy", "", source, "", "device_plugin", error),)
    return (UnreadableConfig(LABEL_KIND, "", PLUGIN_CONFIG, "", "device_plugin", error),)
