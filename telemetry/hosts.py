"""Which node a sample was read on, when the exporter's `Hostname` is not a node name. PURE.

dcgm-exporter sets `Hostname` to the host it runs on. In a pod without host networking that is
the pod's own name (`nvidia-dcgm-exporter-7hx2q`): exporters before NODE_NAME was honoured, and
deployments that do not set it, label every GPU of the node with their pod's name. Read as is,
no sample would ever match a node: every GPU node would look silent (ATTR-003) and no busy GPU
could be told held or not. The inventory knows which node that pod runs on."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import replace

from telemetry.samples import GpuSample


def hosts_resolve(
    samples: Iterable[GpuSample], nodes: Collection[str], pod_nodes: Mapping[str, str]
) -> list[GpuSample]:
    """The samples, each whose hostname names no node but a pod (`pod_nodes`: a pod name
    the cluster has once -> its node) read as that pod's node."""
    out = []
    for s in samples:
        node = pod_nodes.get(s.hostname) if s.hostname not in nodes else None
        out.append(replace(s, hostname=node) if node else s)
    return out


def unique_pod_nodes(rows: Iterable[tuple[str, str]]) -> dict[str, str]:
    """(pod name, node name) rows -> pod name -> node, for the names only one pod has (two
    namespaces may both hold a pod so named: which node the exporter ran on is then unknown)."""
    found: dict[str, str] = {}
    twice: set[str] = set()
    for name, node in rows:
        if name in found and found[name] != node:
            twice.add(name)
        found.setdefault(name, node)
    return {name: node for name, node in found.items() if name not in twice}
