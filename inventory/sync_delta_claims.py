"""The hostPath or local PersistentVolume behind each claim of the pods and pod templates a
watch re-sync rewrites (inventory.sync_delta).

A full list reads every PersistentVolume with the pods, and each claim bound to a PV of type
hostPath or local is stored with that PV and its node path (inventory/sources/
persistent_volumes.py), which POD-003, POD-005 and the leftover-locals check read. A watch
delta holds the pods and controllers that changed without the PVs, so read alone their claims
would lose the node path, unlike the full list before them. The binding lives on the PV (its
claimRef and phase), and a PV's volume source cannot change after creation, so while no
hostPath or local PV changed the answer stored for a claim (bound to such a PV, or to none) is
still true: a pod's own stored version gives it, else another stored pod or template naming the
claim. A hostPath or local PV that changed, or a claim nothing stored names while the last full
list read PVs, needs that full list again (NeedsFullSync). A cluster whose PVs could not be
listed stores no claim's PV at all, and the run says why (inventory.sources.kube_kinds).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from inventory import snapshot as snap
from inventory.models import ClusterObject, Pod
from inventory.sources.base import WatchDelta
from inventory.sources.kube_kinds import NOT_LISTED, NOT_SERVED
from inventory.sources.persistent_volumes import NodePathVolume, node_path, with_claim_paths
from inventory.sources.raw import meta, text
from inventory.sync_delta_guards import NeedsFullSync

KIND = "PersistentVolume"
Claim = tuple[str, str]  # (namespace, claim name)


def refuse_node_path_volumes(delta: WatchDelta) -> None:
    """A hostPath or local PV created, bound, released or deleted: the claims it binds are
    re-read with it. Other PVs never reach a node path (their source is immutable)."""
    for obj in [*delta.changed, *delta.deleted]:
        if obj.get("kind") == KIND and node_path(obj):
            name = text(meta(obj).get("name"), "") or ""
            raise NeedsFullSync(f"PersistentVolume {name} changed: the claims it binds are re-read")


def with_stored_claim_paths(
    cluster: Any,
    delta: WatchDelta,
    changed: snap.ClusterSnapshot,
    old_pods: dict[tuple[str, str], tuple],
) -> snap.ClusterSnapshot:
    """The changed pods and controllers, each claim given the node-path PV stored for it."""
    if delta.resource_versions.get(KIND) in (None, NOT_LISTED, NOT_SERVED):
        return changed  # the last full list read no PV: no claim was resolved then either
    templates = [w.template for w in changed.workloads if w.template is not None]
    wanted = _claims([*changed.pods, *templates])
    if not wanted:
        return changed
    known: dict[Claim, NodePathVolume | None] = {}
    for pod in changed.pods:  # its own stored version first: one row already read
        old = old_pods.get((pod.namespace, pod.name))
        if old:
            _learn(known, ((old[4].namespace, v) for v in old[4].volumes))
    if missing := wanted - set(known):
        _learn(known, _stored_volumes(cluster, {ns for ns, _ in missing}))
    if unknown := sorted(wanted - set(known)):
        namespace, claim = unknown[0]
        raise NeedsFullSync(
            f"a pod names claim {namespace}/{claim}, whose PersistentVolume is not stored"
        )
    bound = {claim: pv for claim, pv in known.items() if pv is not None}
    workloads = tuple(
        replace(w, template=with_claim_paths(w.template, bound)) if w.template else w
        for w in changed.workloads
    )
    pods = tuple(with_claim_paths(p, bound) for p in changed.pods)
    return replace(changed, pods=pods, workloads=workloads)


def _claims(pods: Iterable[snap.Pod]) -> set[Claim]:
    return {(p.namespace, v.claim) for p in pods for v in p.volumes if v.claim}


def _learn(known: dict[Claim, NodePathVolume | None], volumes: Iterable[tuple[str, Any]]) -> None:
    """Each claim's stored answer: its node-path PV, or None (bound to no such PV)."""
    for namespace, volume in volumes:
        claim, pv, path, local = _fields(volume)
        if not claim:
            continue
        if pv and path:
            known[(namespace, claim)] = NodePathVolume(pv, path, local)
        else:
            known.setdefault((namespace, claim), None)


def _fields(volume: Any) -> tuple[str | None, str | None, str | None, bool]:
    if isinstance(volume, snap.Volume):
        return volume.claim, volume.persistent_volume, volume.pv_path, volume.pv_local
    if not isinstance(volume, dict):
        return None, None, None, False
    claim, pv, path = volume.get("claim"), volume.get("persistent_volume"), volume.get("pv_path")
    return claim, pv, path, volume.get("pv_local") is True


def _stored_volumes(cluster: Any, namespaces: set[str]) -> Iterable[tuple[str, Any]]:
    """The volumes of the stored pods and pod templates in these namespaces, as stored."""
    pods = Pod.objects.filter(cluster=cluster, namespace__in=sorted(namespaces))
    templates = ClusterObject.objects.filter(
        cluster=cluster, kind="workload", namespace__in=sorted(namespaces)
    )
    for rows in (
        pods.values_list("namespace", "data__volumes"),
        templates.values_list("namespace", "data__template__volumes"),
    ):
        for namespace, volumes in rows.iterator(chunk_size=2000):
            for volume in volumes if isinstance(volumes, list) else ():
                yield namespace, volume
