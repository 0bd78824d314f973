"""The workload each stored pod belongs to, named as its findings name it (inventory.owners.
workload_of over the last sync's owner links): for the workloads API's `workload_kind` and
`workload_name`, so a client goes from a finding's subject to the pods it spans.

A page costs a fixed number of queries whatever its size: the owner links of the page's
namespaces (and the cluster-scoped ones) in one, and the pods that own pods (a Spark driver,
a LeaderWorkerSet's leader) in one more per level of such ownership, none on most pages."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from inventory import snapshot as snap
from inventory.models import ClusterObject, Pod
from inventory.owners import MAX_DEPTH, OwnerIndex, WorkloadRef, workload_of

PodKey = tuple[int, str, str]  # (cluster id, namespace, name)


def pod_workloads(pods: Iterable[Pod]) -> dict[int, WorkloadRef]:
    """pod id -> its workload."""
    pods = list(pods)
    if not pods:
        return {}
    links = _owner_links(pods)
    known = {
        (p.cluster_id, p.namespace, p.name): _owner_facts(p.namespace, p.name, p.data) for p in pods
    }
    _read_owner_pods(known, links)
    indexes = {
        cluster: OwnerIndex(found, (pod for (c, _, _), pod in known.items() if c == cluster))
        for cluster, found in links.items()
    }
    return {
        p.pk: workload_of(known[(p.cluster_id, p.namespace, p.name)], indexes[p.cluster_id])
        for p in pods
    }


def _owner_links(pods: list[Pod]) -> dict[int, list[snap.OwnerLink]]:
    """cluster id -> the owner links of the pods' namespaces and the cluster-scoped ones."""
    rows = ClusterObject.objects.filter(
        kind=ClusterObject.Kind.OWNER,
        cluster_id__in={p.cluster_id for p in pods},
        namespace__in=sorted({p.namespace for p in pods} | {""}),
    ).order_by()
    links: dict[int, list[snap.OwnerLink]] = {p.cluster_id: [] for p in pods}
    for cluster, data in rows.values_list("cluster_id", "data"):
        links[cluster].append(snap.from_dict(snap.OwnerLink, data))
    return links


def _read_owner_pods(known: dict[PodKey, snap.Pod], links: dict[int, list[snap.OwnerLink]]) -> None:
    """Add to `known` the pods its pods and the links name as owners, level by level (a pod
    named but not stored is asked for once)."""
    wanted = _pod_owners(known) | {
        (cluster, link.namespace, link.owner_name)
        for cluster, found in links.items()
        for link in found
        if link.owner_kind == "Pod" and link.owner_name
    }
    asked: set[PodKey] = set()
    for _ in range(MAX_DEPTH):
        missing = wanted - known.keys() - asked
        if not missing:
            return
        asked |= missing
        rows = Pod.objects.filter(
            cluster_id__in={c for c, _, _ in missing},
            namespace__in=sorted({ns for _, ns, _ in missing}),
            name__in=sorted({name for _, _, name in missing}),
        ).order_by()
        found = {
            (c, ns, name): _owner_facts(ns, name, data)
            for c, ns, name, data in rows.values_list("cluster_id", "namespace", "name", "data")
            if (c, ns, name) in missing
        }
        known.update(found)
        wanted = _pod_owners(found)


def _pod_owners(pods: dict[PodKey, snap.Pod]) -> set[PodKey]:
    return {
        (cluster, ns, pod.owner_name)
        for (cluster, ns, _), pod in pods.items()
        if pod.owner_kind == "Pod" and pod.owner_name
    }


def _owner_facts(namespace: str, name: str, data: dict[str, Any]) -> snap.Pod:
    """The fields of a stored pod the owner chain reads, not the whole pod decoded."""
    return snap.Pod(
        namespace,
        name,
        labels=dict(data.get("labels") or {}),
        owner_kind=data.get("owner_kind"),
        owner_name=data.get("owner_name"),
        owner_uid=data.get("owner_uid") or "",
        owner_api_version=data.get("owner_api_version") or "",
        owner_found=data.get("owner_found") or "",
    )
