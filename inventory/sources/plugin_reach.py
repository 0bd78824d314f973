"""Which GPU nodes a device-plugin DaemonSet reaches, for what its config references show. PURE.

A device-plugin DaemonSet shows which ConfigMap is its config, or that it reads none, only on
the nodes it runs on. Clusters that keep a legacy node group beside the GPU Operator run a
standalone plugin whose nodeSelector picks those nodes only; a node it does not reach reads what
its own plugin reads. So the plugin's DaemonSets show the cluster's config only
where every GPU node is reached by one of them; where a GPU node is reached by none, the config
is read as with no plugin DaemonSet in the snapshot (gpu_config: a platform ConfigMap of that
content may be it), and each node still reads what its own plugin shows (plugin_file,
plugin_placement). A node reached by two plugins reads as nodes.py decides (the Operator's
plugin, or one running config-manager, reads the node's label). Reach is inventory.placement's
(nodeSelector, required node affinity, tolerations) or a pod of the DaemonSet on the node; a fit
that cannot be judged counts as reach.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from inventory.placement import workload_fit
from inventory.snapshot import Pod, Taint, Workload
from inventory.sources.gpu_signs import gpu_signs
from inventory.sources.images import container_component
from inventory.sources.node_fields import node_taints
from inventory.sources.plugin_placement import OPERATOR_DEPLOY_LABEL
from inventory.sources.raw import dig, labels_of, name_of

# Nodes named in a sync warning; the rest are counted.
_SHOWN = 5


@dataclass(frozen=True)
class GpuNode:
    """What a DaemonSet's placement is judged against: a GPU node's name, labels and taints."""

    name: str
    labels: dict[str, str]
    taints: tuple[Taint, ...]


def gpu_nodes(raw_nodes: Iterable[dict[str, Any]]) -> tuple[GpuNode, ...]:
    """The Node objects with a sign of GPUs (capacity, GFD or cloud labels: gpu_signs)."""
    return tuple(
        GpuNode(name_of(raw), labels, node_taints(dig(raw, "spec").get("taints")))
        for raw in raw_nodes
        if gpu_signs(labels := labels_of(raw), dig(raw, "status"), ())
    )


def unreached(
    daemonsets: Sequence[Workload], nodes: Iterable[GpuNode], pods: Iterable[Pod]
) -> list[str]:
    """The GPU nodes none of `daemonsets` runs on, nor would run on."""
    names = {(ds.namespace, ds.name) for ds in daemonsets}
    running = {
        p.node_name
        for p in pods
        if p.is_active and p.owner_kind == "DaemonSet" and (p.namespace, p.owner_name) in names
    }
    return sorted(
        n.name
        for n in nodes
        if n.name not in running
        and all(workload_fit(n.name, n.labels, n.taints, ds).fits is False for ds in daemonsets)
    )


def unreached_warning(daemonsets: Sequence[str], nodes: Sequence[str]) -> str:
    """Why a device-plugin ConfigMap no plugin DaemonSet names may still be read as its config."""
    more = f" and {len(nodes) - _SHOWN} more" if len(nodes) > _SHOWN else ""
    where = f"GPU node{'s' if len(nodes) > 1 else ''} {', '.join(nodes[:_SHOWN])}{more}"
    return (
        f"{', '.join(sorted(daemonsets))} run{'' if len(daemonsets) > 1 else 's'} the NVIDIA "
        f"device plugin but not on {where} (its nodeSelector, affinity or tolerations exclude "
        "them, and no pod of it runs there): which config it reads says nothing of those nodes, "
        "so a device-plugin config in a platform namespace may be theirs, as with no plugin "
        "DaemonSet in the snapshot"
    )


def plugin_absent(
    node_name: str,
    labels: dict[str, str],
    taints: tuple[Taint, ...],
    pods_on_node: Iterable[Pod],
    daemonsets: Sequence[Workload],
    operator_namespace: str | None,
    capacity: Mapping[str, int],
) -> str:
    """Why no device plugin runs on the node, nor would run: "" where one does or may. A node
    advertising GPU resources (`capacity`) has one, seen or not: only a registered plugin makes
    the kubelet advertise them (a DRA node never does). Otherwise none runs where no plugin pod
    is there and every device-plugin DaemonSet excludes the node; the GPU Operator's own
    (selecting by its deploy label, or in its namespace) excludes a node whose deploy label is
    "false", whatever a snapshot shows of its nodeSelector. With no plugin DaemonSet in the
    snapshot, only that label tells: otherwise where it runs is not shown."""
    if any(v > 0 for v in capacity.values()) or any(
        p.is_active
        # GFD runs the plugin's image: container_component tells it apart.
        and any(
            container_component(c.name, c.image, c.command) == "device_plugin" for c in p.containers
        )
        for p in pods_on_node
    ):
        return ""
    off = labels.get(OPERATOR_DEPLOY_LABEL, "").strip().lower() == "false"
    plugins = [ds for ds in daemonsets if ds.kind == "DaemonSet" and _runs_plugin(ds)]
    if not (plugins or off):
        return ""
    # The Operator writes "false" where it must not run its plugin (a DRA node, a node left to
    # another plugin); its plugin DaemonSet selects "true".
    why = [f"its label {OPERATOR_DEPLOY_LABEL}=false keeps the GPU Operator's plugin off"]
    why = why if off else []
    for ds in sorted(plugins, key=lambda d: (d.namespace, d.name)):
        name = f"DaemonSet {ds.namespace}/{ds.name}"
        if off and _operators(ds, operator_namespace):
            why.append(f"{name} is the GPU Operator's")
            continue
        fit = workload_fit(node_name, labels, taints, ds)
        if fit.fits is not False:  # a fit that cannot be judged counts as reach
            return ""
        why.append(f"{name}: {fit.why}")
    why_all = "; ".join(why)
    return f"no device plugin runs on the node, nor would run: no pod of one is there ({why_all})"


def _runs_plugin(ds: Workload) -> bool:
    """Whether the DaemonSet runs NVIDIA's device plugin (not GFD, which shares its image)."""
    if ds.template is not None:
        return any(
            container_component(c.name, c.image, c.command) == "device_plugin"
            for c in ds.template.containers
        )
    return any(container_component(n, i) == "device_plugin" for n, i in ds.images.items())


def _operators(ds: Workload, operator_namespace: str | None) -> bool:
    """Whether the DaemonSet is the GPU Operator's device plugin."""
    return OPERATOR_DEPLOY_LABEL in ds.node_selector or ds.namespace == operator_namespace
