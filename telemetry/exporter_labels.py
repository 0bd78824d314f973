"""Labels that name the exporter itself, not the GPU's node or pod. PURE.

Which node a sample was read on, when the exporter's `Hostname` is not a node name:
dcgm-exporter sets `Hostname` to the host it runs on. In a pod without host networking that is
the pod's own name (`nvidia-dcgm-exporter-7hx2q`): exporters before NODE_NAME was honoured, and
deployments that do not set it, label every GPU of the node with their pod's name. Read as is,
no sample would ever match a node: every GPU node would look silent (ATTR-003) and no busy GPU
could be told held or not. The inventory knows which node that pod runs on. So does it of a
host's own name where the node is named otherwise: the node's `kubernetes.io/hostname` label,
or its short name where the node's is a fully qualified one (`ip-10-0-1-23` for
`ip-10-0-1-23.ec2.internal`).

Whose pod a sample names, when a Prometheus scrape stamped its target's own `namespace`/`pod`
(the exporter's) on a sample the exporter left without them (a GPU no pod holds, or every GPU
with the exporter's Kubernetes mapping off): the sample names no workload, and its usage is
nobody's, not the platform's.

Whether a sample's pod held its GPU then (ATTR-001, `PodLabels`): the exporter names a pod
only where the kubelet's pod resources gave it the device, at the sample's time; the inventory
is read at another. A Job that completed since, or a pod started after the last sync, held its
GPU when the exporter said so: read against the inventory's present alone, every finished or
new training run would look like a hijack for as long as its busy samples stay in the window."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime

from telemetry.hijack import Device, Hijack
from telemetry.samples import GpuSample


def hosts_resolve(
    samples: Iterable[GpuSample], nodes: Collection[str], aliases: Mapping[str, str]
) -> list[GpuSample]:
    """The samples, each whose hostname names no node but has an alias (a node's host name,
    or a pod's name, that one node has -> that node) read as that node."""
    out = []
    for s in samples:
        node = aliases.get(s.hostname) if s.hostname not in nodes else None
        out.append(replace(s, hostname=node) if node else s)
    return out


def hosts_placed(
    samples: Iterable[GpuSample],
    nodes: Collection[str],
    pod_nodes: Mapping[tuple[str, str], str],
    gpu_nodes: Mapping[str, str],
) -> dict[str, str]:
    """hostname -> node for each hostname that names no node and no alias (an exporter pod
    newer than the last sync, its name as `Hostname`), from what its samples name: pods
    ((namespace, name) -> node) the inventory places, GPUs (UUID -> node) earlier samples
    placed. Only where all of it agrees on one node; else the hostname stays as it is."""
    found: dict[str, set[str]] = {}
    for s in samples:
        if s.hostname in nodes:
            continue
        seen = found.setdefault(s.hostname, set())
        if node := pod_nodes.get((s.namespace, s.pod)) if s.pod else None:
            seen.add(node)
        if node := gpu_nodes.get(s.uuid) if s.uuid else None:
            seen.add(node)
    return {host: next(iter(seen)) for host, seen in found.items() if len(seen) == 1}


def node_aliases(nodes: Iterable[tuple[str, Mapping[str, str]]]) -> Iterator[tuple[str, str]]:
    """(alias, node) for each (node name, labels): its host name label and its short name."""
    for name, labels in nodes:
        host = (labels or {}).get("kubernetes.io/hostname")
        if host and host != name:
            yield str(host), name
        if "." in name:
            yield name.split(".", 1)[0], name


def unique_names(rows: Iterable[tuple[str, str]]) -> dict[str, str]:
    """(name, node name) rows -> name -> node, for the names only one node has. The names are
    pods' names or hosts' (node_aliases): two namespaces may both hold a pod so named, two nodes
    share a short name; which node the exporter ran on is then unknown."""
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


PodKey = tuple[str, str]  # (namespace, name)


@dataclass(frozen=True)
class PodLabels:
    """What the last inventory says of the pods samples name."""

    holding: Collection[PodKey]  # active pods holding GPUs (device plugin or DRA)
    # pods that held GPUs and ran to an end (Succeeded, Failed) -> when a sync saw them so
    finished: Mapping[PodKey, datetime]
    known: Collection[PodKey]  # every pod the inventory lists
    exporter_sets: Collection[PodKey]  # (namespace, DaemonSet) of the DCGM-Exporter pods
    # pod -> the node the inventory binds it to; and the inventory's nodes
    placed: Mapping[PodKey, str] = field(default_factory=dict)
    nodes: Collection[str] = ()

    def held(self, namespace: str, pod: str, time: datetime, hostname: str) -> bool:
        """Whether the pod a sample at `time` from `hostname` names held the sample's device.

        Never a pod the inventory binds to another node (elsewhere). An active GPU pod does.
        A pod that ran to an end did up to the sync that saw it
        finished (a kubelet that still lists a terminated pod's devices cannot cover a GPU
        past that). A pod the inventory does not know at all is newer than the
        read or deleted since: the kubelet gave it the device (judged again once a sync has
        seen it), unless it is an exporter pod the read did not see, whose name a scrape
        stamped on a GPU the exporter left bare. Any other known pod holds no GPU."""
        key = (namespace, pod)
        if not pod or self.elsewhere(namespace, pod, hostname):
            return False
        if key in self.holding:
            return True
        if (until := self.finished.get(key)) is not None:
            return time <= until
        if key in self.known:
            return False
        return not self._exporter(namespace, pod)

    def elsewhere(self, namespace: str, pod: str, hostname: str) -> str:
        """The node the inventory binds the sample's pod to, where that is not the sample's
        own (an inventory node): "" otherwise. DCGM-Exporter names pods from its own node's
        kubelet (pod resources), so such a label is stale, mislabelled or forged and explains
        no GPU here. A host the inventory does not list is not judged: it may be that node
        under another name."""
        there = self.placed.get((namespace, pod), "") if pod else ""
        return there if there and hostname in self.nodes and there != hostname else ""

    def unknown(self, namespace: str, pod: str, hostname: str) -> bool:
        """Whether a sample from an inventory node names a pod the inventory does not list
        (created since the sync, or a wrong label), not an exporter's own: held for ATTR-001
        (a new pod looks the same), but whose usage it is cannot be verified (ATTR-002)."""
        return (
            bool(pod)
            and hostname in self.nodes
            and (namespace, pod) not in self.known
            and not self._exporter(namespace, pod)
        )

    def _exporter(self, namespace: str, pod: str) -> bool:
        return any(namespace == ns and pod.startswith(f"{ds}-") for ns, ds in self.exporter_sets)


@dataclass(frozen=True)
class UnknownPodLabel:
    """A GPU of an inventory node whose samples name a pod the inventory does not list
    (PodLabels.unknown): its usage is booked at no confidence, and ATTR-002 says why."""

    node: str
    uuid: str  # or the GPU's index where the exporter gave no UUID
    gi_id: str
    pod: str  # "namespace/name"
    first: datetime
    last: datetime


def unknown_pod_labels(samples: Iterable[GpuSample], labels: PodLabels) -> list[UnknownPodLabel]:
    """One per GPU and unknown pod its samples name, from its first to its last such sample;
    sorted by node, GPU, pod."""
    seen: dict[tuple[str, str, str, str], list[datetime]] = {}
    for s in samples:
        if labels.unknown(s.namespace, s.pod, s.hostname):
            key = (s.hostname, s.uuid or s.gpu, s.gi_id, f"{s.namespace}/{s.pod}")
            span = seen.setdefault(key, [s.time, s.time])
            span[0], span[1] = min(span[0], s.time), max(span[1], s.time)
    return [UnknownPodLabel(*key, first, last) for key, (first, last) in sorted(seen.items())]


def elsewhere_noted(
    hijacks: Iterable[Hijack], samples: Iterable[GpuSample], labels: PodLabels
) -> list[Hijack]:
    """The hijacks, each whose run's samples name pods the inventory binds to another node
    saying so (Hijack.labelled_elsewhere): the label is why the GPU looked held, and why it
    is not."""
    named: dict[Device, set[tuple[str, str, datetime]]] = {}
    for s in samples:
        if there := labels.elsewhere(s.namespace, s.pod, s.hostname):
            named.setdefault(s.device, set()).add((f"{s.namespace}/{s.pod}", there, s.time))
    out = []
    for h in hijacks:
        pods = sorted({(p, n) for p, n, t in named.get(h.device, ()) if h.start <= t <= h.end})
        if pods:
            note = h.held_note or (
                "no pod on this node holds this GPU: its samples name "
                + ", ".join(f"{p}, which the last inventory has on {n}" for p, n in pods)
                + "; DCGM-Exporter names only pods of its own node, so the label is stale, "
                "mislabelled or forged"
            )
            h = replace(h, labelled_elsewhere=tuple(pods), held_note=note)
        out.append(h)
    return out
