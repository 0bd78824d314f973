"""Labels that name the exporter itself, not the GPU's node or pod. PURE.

Which node a sample was read on, when the exporter's `Hostname` is not a node name:
dcgm-exporter sets `Hostname` to the host it runs on. In a pod without host networking that is
the pod's own name (`nvidia-dcgm-exporter-7hx2q`): exporters before NODE_NAME was honoured, and
deployments that do not set it, label every GPU of the node with their pod's name. Read as is,
no sample would ever match a node: every GPU node would look silent (ATTR-003) and no busy GPU
could be told held or not. The inventory knows which node that pod runs on.

Whose pod a sample names, when a Prometheus scrape stamped its target's own `namespace`/`pod`
(the exporter's) on a sample the exporter left without them (a GPU no pod holds, or every GPU
with the exporter's Kubernetes mapping off): the sample names no workload, and its usage is
nobody's, not the platform's."""

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


def exporter_labels_strip(
    samples: Iterable[GpuSample], exporter_pods: Collection[tuple[str, str]]
) -> list[GpuSample]:
    """The samples, each whose (namespace, pod) is an exporter's own pod read without them."""
    return [
        replace(s, namespace="", pod="", container="")
        if s.pod and (s.namespace, s.pod) in exporter_pods
        else s
        for s in samples
    ]
