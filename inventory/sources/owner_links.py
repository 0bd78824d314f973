"""The owner links a snapshot keeps: what inventory/owners.py walks from a pod to its workload.
PURE: no Django, no ORM, no network.

Every object read with a controller ownerReference (`controller: true`: the one controller
that reconciles it; or, where no reference carries the flag, one to a kind that runs pods)
is noted as it is read, whatever its kind; at the end only the links a
pod's chain (or a workload template's) passes through are kept, so a cluster's thousands of
EndpointSlices and ControllerRevisions cost nothing in the snapshot. Cluster-scoped objects
are noted too: an ownerReference does not say whether its owner is namespaced, and the GPU
Operator's DaemonSets are owned by its cluster-scoped ClusterPolicy; such an owner, present
and at the top of a chain, keeps a link with no owner (its scope, and that it exists).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from inventory.owners import MAX_DEPTH, qualified_kind
from inventory.snapshot import OwnerLink, Pod, Workload
from inventory.sources.raw import controller_reference, name_of, namespace_of, text

Key = tuple[str, str, str]  # (kind with its group where it shares a built-in's name, ns, name)


def controller_ref(obj: dict[str, Any]) -> tuple[str, str] | None:
    """(kind, name) of the object's controller (inventory.sources.raw.controller_reference, the
    rule pods and ReplicaSets follow too), None without one."""
    ref = controller_reference(obj)
    kind, name = text(ref.get("kind")), text(ref.get("name"))
    if kind and name:
        return qualified_kind(kind, text(ref.get("apiVersion"), "") or ""), name
    return None


@dataclass
class OwnerNotes:
    """What the objects read say of owners, before the pods' chains are known."""

    controlled: dict[Key, tuple[str, str]] = field(default_factory=dict)  # -> (kind, name)
    cluster_scoped: set[tuple[str, str]] = field(default_factory=set)  # (kind, name)

    def note(self, kind: str, obj: dict[str, Any]) -> None:
        if kind == "Pod":
            return  # a pod's owner is on the snapshot's Pod itself
        qualified = qualified_kind(kind, text(obj.get("apiVersion"), "") or "")
        # As the API wrote it: a namespace on namespaced objects only (snapshot_items.py).
        namespace = namespace_of(obj)
        if not namespace:
            self.cluster_scoped.add((qualified, name_of(obj)))
        if (owner := controller_ref(obj)) is not None:
            self.controlled[(qualified, namespace or "", name_of(obj))] = owner

    def links(
        self, known: Iterable[OwnerLink], pods: Iterable[Pod], workloads: Iterable[Workload]
    ) -> list[OwnerLink]:
        """`known` (the ReplicaSets', Jobs' and CronJobs', kept whole), and the links of the
        objects the chains of these pods and workload templates pass through."""
        found: dict[Key, OwnerLink] = {(o.kind, o.namespace, o.name): o for o in known}
        by_name = {(p.namespace, p.name): p for p in pods}
        starts = [(p.owner_kind, p.namespace, p.owner_name) for p in by_name.values()]
        starts += [(w.kind, w.namespace, w.name) for w in workloads]
        walked: set[Key] = set()
        for kind, namespace, name in starts:
            if kind and name and kind != "Node":  # a static pod's Node is no controller
                self._walk((kind, namespace, name), by_name, found, walked)
        return list(found.values())

    def _walk(
        self, node: Key, pods: dict[tuple[str, str], Pod], found: dict[Key, OwnerLink], walked: set
    ) -> None:
        for _ in range(MAX_DEPTH + 1):
            kind, namespace, name = node = self._scoped(node)
            if node in walked:
                return  # walked from here already (or a cycle)
            walked.add(node)
            if kind == "Pod":  # a pod owning pods (a Spark driver): on to its own owner
                pod = pods.get((namespace, name))
                if pod is None or not pod.owner_kind or not pod.owner_name:
                    return
                node = (pod.owner_kind, namespace, pod.owner_name)
                continue
            link = found.get(node) or self._link(node)
            if link is None:
                return
            found[node] = link
            if not link.owner_kind or not link.owner_name:
                return
            node = (link.owner_kind, namespace, link.owner_name)

    def _link(self, node: Key) -> OwnerLink | None:
        """The node's link: its controller, or (cluster-scoped, at the top) its scope."""
        kind, namespace, name = node
        if (owner := self.controlled.get(node)) is not None:
            return OwnerLink(kind, namespace, name, *owner)
        if not namespace and (kind, name) in self.cluster_scoped:
            return OwnerLink(kind, "", name)
        return None

    def _scoped(self, node: Key) -> Key:
        """The node as keyed: an owner named from a namespace may be cluster-scoped."""
        kind, namespace, name = node
        if namespace and node not in self.controlled and (kind, name) in self.cluster_scoped:
            return (kind, "", name)
        return node
