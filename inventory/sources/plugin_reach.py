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

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from inventory.placement import workload_fit
from inventory.snapshot import Pod, Taint, Workload
from inventory.sources.gpu_signs import gpu_signs
from inventory.sources.node_fields import node_taints
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
