"""Nodes whose DCGM-Exporter names no pod: who holds a busy GPU there is unknown. PURE.

With its Kubernetes mapping on, the exporter labels each sample of a GPU a pod holds with that
pod; a GPU no pod holds has no pod label, which is what ATT&CK T1496.001 detection reads. When
the mapping is off (`DCGM_EXPORTER_KUBERNETES=false`, the kubelet's pod-resources socket not
mounted) or a scrape drops the labels, no sample of the node names a pod, held GPUs included.
(A Prometheus scrape may then stamp its target's own `pod`, the exporter's, on every sample:
a label counts only when it names a pod that holds GPUs.) On such a node an unlabelled busy GPU
proves nothing by itself. What the inventory still says
is how many GPUs scheduled pods hold there: while no more GPUs are busy than that, each busy
one may be a held one (cannot tell, ATTR-002); more busy GPUs than held ones means at least
the difference run outside the scheduler (ATTR-001)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from telemetry.samples import GpuSample


@dataclass(frozen=True)
class UnmappedNode:
    node: str
    busy_devices: int  # GPUs (or MIG instances) busy above the threshold in the samples read
    held_by_pods: int  # GPU units the node's running pods hold, from the inventory

    @property
    def explained(self) -> bool:
        """Every busy GPU may be one the node's pods hold."""
        return self.busy_devices <= self.held_by_pods

    def note(self) -> str:
        """Why a busy GPU of this node is or is not taken as held, for the evidence."""
        counts = (
            f"{self.busy_devices} GPU(s) busy while its scheduled pods hold {self.held_by_pods}"
        )
        if self.explained:
            return (
                "the exporter on this node labels no sample with a pod, so which GPU a pod "
                f"holds is unknown; {counts}: each busy GPU may be a held one"
            )
        unheld = self.busy_devices - self.held_by_pods
        return (
            "the exporter on this node labels no sample with a pod, so which GPU is the "
            f"unheld one is unknown; {counts}: at least {unheld} run(s) outside the scheduler"
        )


def unmapped_nodes(
    samples: Iterable[GpuSample],
    held_by_node: Mapping[str, int],
    gpu_pods: Collection[tuple[str, str]],
    *,
    threshold: float,
) -> dict[str, UnmappedNode]:
    """The nodes whose pods hold GPUs (`held_by_node`, GPU units per node) but none of whose
    samples names a pod holding GPUs (`gpu_pods`: (namespace, name)), with how many of their
    devices were busy above `threshold`."""
    labelled: set[str] = set()
    sampled: set[str] = set()
    busy: dict[str, set[tuple[str, str, str]]] = defaultdict(set)
    for s in samples:
        sampled.add(s.hostname)
        if s.pod and (s.namespace, s.pod) in gpu_pods:
            labelled.add(s.hostname)
        value = s.busy
        if value is not None and value > threshold:
            busy[s.hostname].add(s.device)
    return {
        node: UnmappedNode(node, len(busy.get(node, ())), held_by_node[node])
        for node in sorted(sampled - labelled)
        if held_by_node.get(node, 0) > 0
    }
