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

Kubernetes knows an owner by its uid, not its name. So each link (and each pod) also says what
the snapshot holds of the owner it names (`owner_found`, inventory.owners.OWNER_FOUND): the
object of that kind and name with that uid ("read"), none of that name ("absent"), one of that
name with another uid ("replaced": the owner named was deleted and its name reused), or none
here but the uid is another namespace's object's ("elsewhere": a reference across namespaces,
which Kubernetes never follows). Only a whole read can say so (`OwnerNotes.whole`): a watch
re-sync's changes hold too few objects, and record nothing ("").

An Argo Rollout that runs the pod template of another workload (`spec.workloadRef`, and no
template of its own) keeps a link to that workload, `owner_via` "spec.workloadRef": its
template is what one edits (inventory.owners).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from inventory.owners import ABSENT, ELSEWHERE, MAX_DEPTH, READ, REPLACED, qualified_kind
from inventory.snapshot import OwnerLink, Pod, Workload
from inventory.sources.raw import (
    controller_reference,
    dig,
    name_of,
    namespace_of,
    text,
    uid_of,
)

Key = tuple[str, str, str]  # (kind with its group where it shares a built-in's name, ns, name)
WORKLOAD_REF = "spec.workloadRef"
ARGO_GROUP = "argoproj.io"


@dataclass(frozen=True)
class Named:
    """An owner as a reference names it: its kind (with its group where it shares a built-in's
    name), name, uid and apiVersion ("" where the reference gives none)."""

    kind: str
    name: str
    uid: str = ""
    api_version: str = ""


def controller_ref(obj: dict[str, Any]) -> Named | None:
    """The object's controller as its reference names it (inventory.sources.raw.
    controller_reference, the rule pods and ReplicaSets follow too), None without one."""
    return _named(controller_reference(obj))


def _named(ref: dict[str, Any]) -> Named | None:
    kind, name = text(ref.get("kind")), text(ref.get("name"))
    if not kind or not name:
        return None
    api_version = text(ref.get("apiVersion"), "") or ""
    return Named(
        qualified_kind(kind, api_version), name, text(ref.get("uid"), "") or "", api_version
    )


def template_fields(obj: dict[str, Any]) -> dict[str, Any]:
    """What of an Argo Rollout's spec template_ref reads, and nothing else (never its pod
    template: a live sync keeps only this of the custom owners it lists, kube_owners.slim):
    its `workloadRef`, and whether it has a template of its own."""
    group = (text(obj.get("apiVersion"), "") or "").partition("/")[0]
    if obj.get("kind") != "Rollout" or group != ARGO_GROUP:
        return {}
    spec = dig(obj, "spec")
    kept: dict[str, Any] = {"workloadRef": spec["workloadRef"]} if "workloadRef" in spec else {}
    if spec.get("template"):
        kept["template"] = {"kept": False}  # it has one; what it holds is not read here
    return kept


def template_ref(obj: dict[str, Any]) -> Named | None:
    """The workload an Argo Rollout runs the pod template of (`spec.workloadRef`), where it has
    no template of its own (the two exclude each other; its own would be what runs)."""
    group = (text(obj.get("apiVersion"), "") or "").partition("/")[0]
    spec = dig(obj, "spec")
    if obj.get("kind") != "Rollout" or group != ARGO_GROUP or spec.get("template"):
        return None
    return _named(dig(spec, "workloadRef"))


@dataclass
class OwnerNotes:
    """What the objects read say of owners, before the pods' chains are known."""

    controlled: dict[Key, Named] = field(default_factory=dict)  # -> its controller
    cluster_scoped: set[tuple[str, str]] = field(default_factory=set)  # (kind, name)
    # Every object read, by key, with its uid ("" where it has none), and the key of each uid:
    # what an owner reference's uid is checked against (owner_found).
    uids: dict[Key, str] = field(default_factory=dict)
    holders: dict[str, Key] = field(default_factory=dict)
    templates: dict[Key, Named] = field(default_factory=dict)  # Rollout -> its workloadRef
    # The objects read are the whole cluster (a full list, a snapshot file): what they lack is
    # not in the snapshot. False for a watch re-sync's changes, which say nothing of owners.
    whole: bool = True

    def note(self, kind: str, obj: dict[str, Any]) -> None:
        qualified = qualified_kind(kind, text(obj.get("apiVersion"), "") or "")
        # As the API wrote it: a namespace on namespaced objects only (snapshot_items.py).
        namespace = namespace_of(obj)
        key = (qualified, namespace or "", name_of(obj))
        self.uids[key] = uid = uid_of(obj)
        if uid:
            self.holders[uid] = key
        if kind == "Pod":
            return  # a pod's owner is on the snapshot's Pod itself
        if not namespace:
            self.cluster_scoped.add((qualified, name_of(obj)))
        if (owner := controller_ref(obj)) is not None:
            self.controlled[key] = owner
        elif (source := template_ref(obj)) is not None:
            self.templates[key] = source

    def links(
        self, known: Iterable[OwnerLink], pods: Iterable[Pod], workloads: Iterable[Workload]
    ) -> list[OwnerLink]:
        """`known` (the ReplicaSets', Jobs' and CronJobs', kept whole), and the links of the
        objects the chains of these pods and workload templates pass through, each saying
        what the snapshot holds of its owner."""
        found: dict[Key, OwnerLink] = {(o.kind, o.namespace, o.name): o for o in known}
        by_name = {(p.namespace, p.name): p for p in pods}
        starts = [(p.owner_kind, p.namespace, p.owner_name) for p in by_name.values()]
        starts += [(w.kind, w.namespace, w.name) for w in workloads]
        walked: set[Key] = set()
        for kind, namespace, name in starts:
            if kind and name and kind != "Node":  # a static pod's Node is no controller
                self._walk((kind, namespace, name), by_name, found, walked)
        return [self._checked(link) for link in found.values()]

    def pods_checked(self, pods: Iterable[Pod]) -> list[Pod]:
        """The pods, each saying what the snapshot holds of the owner it names."""
        return [
            replace(
                p,
                owner_found=self.owner_found(p.namespace, p.owner_kind, p.owner_name, p.owner_uid),
            )
            if p.owner_kind and p.owner_name
            else p
            for p in pods
        ]

    def owner_found(self, namespace: str, kind: str | None, name: str | None, uid: str) -> str:
        """What the snapshot holds of the owner a reference from `namespace` names (the module
        docstring); "" where it cannot tell (not a whole read)."""
        if not self.whole or not kind or not name:
            return ""
        here = (kind, namespace, name)
        if here not in self.uids and (kind, "", name) in self.uids:
            here = (kind, "", name)  # a cluster-scoped owner (a ClusterPolicy)
        if here in self.uids:
            held = self.uids[here]
            return REPLACED if uid and held and uid != held else READ
        holder = self.holders.get(uid) if uid else None
        return ELSEWHERE if holder is not None and holder[1] not in ("", namespace) else ABSENT

    def _checked(self, link: OwnerLink) -> OwnerLink:
        found = self.owner_found(link.namespace, link.owner_kind, link.owner_name, link.owner_uid)
        return replace(link, owner_found=found) if found != link.owner_found else link

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
            return OwnerLink(
                kind,
                namespace,
                name,
                owner.kind,
                owner.name,
                owner_uid=owner.uid,
                owner_api_version=owner.api_version,
            )
        if (source := self.templates.get(node)) is not None:
            return OwnerLink(
                kind,
                namespace,
                name,
                source.kind,
                source.name,
                owner_api_version=source.api_version,
                owner_via=WORKLOAD_REF,
            )
        if not namespace and (kind, name) in self.cluster_scoped:
            return OwnerLink(kind, "", name)
        return None

    def _scoped(self, node: Key) -> Key:
        """The node as keyed: an owner named from a namespace may be cluster-scoped."""
        kind, namespace, name = node
        if namespace and node not in self.controlled and (kind, name) in self.cluster_scoped:
            return (kind, "", name)
        return node
