"""Who a workload belongs to, in the words the node page and the node API's `dra_devices[]`
use (inventory.platform.unclaimed_party): its tenant's slug, or for a namespace no tenant
claims "platform" for a platform namespace and "unclassified" for any other (DESIGN §3, fail
closed: nothing unknown is the platform's). A KAI / Run:ai reservation pod is the scheduler's
placeholder (inventory.fractions.is_reservation_pod, what the checks read through
PostureInputs.is_reservation), so "platform", never "unclassified", even in KAI's own
reservation namespace that is not a platform namespace. For the workloads API's `party` and
`?party=`, and the node page."""

from __future__ import annotations

from collections.abc import Collection, Iterable

from django.db.models import Q, QuerySet

from inventory import snapshot as snap
from inventory.fractions import (
    GPU_GROUP,
    RESERVATION_NAMESPACES,
    RESERVED_GPU,
    is_reservation_pod,
)
from inventory.models import Cluster, Pod
from inventory.platform import (
    PLATFORM,
    UNCLASSIFIED_PARTY,
    cluster_platform_namespaces,
    unclaimed_party,
)


def unclaimed_pod_party(pod: Pod, platform: frozenset[str]) -> str:
    """The party of a stored pod no tenant claims: "platform" for a platform namespace's pod
    or a reservation placeholder, "unclassified" for any other."""
    party = unclaimed_party(pod.namespace, platform)
    if party == UNCLASSIFIED_PARTY and _is_reservation(pod.namespace, pod.data, platform):
        return PLATFORM
    return party


def _is_reservation(namespace: str, data: dict, platform: Collection[str]) -> bool:
    """inventory.fractions.is_reservation_pod of a stored pod no tenant claims. The cheap
    tests first: only KAI's reservation namespaces hold one outside a platform namespace, and
    only a pod with KAI's annotation or label can be one (a page of such pods reads no more)."""
    if namespace not in RESERVATION_NAMESPACES:
        return False
    annotations = data.get("annotations") or {}
    if RESERVED_GPU not in annotations and GPU_GROUP not in (data.get("labels") or {}):
        return False
    return is_reservation_pod(snap.from_dict(snap.Pod, data), owned=False, platform=platform)


def pod_parties(pods: Iterable[Pod]) -> dict[int, str]:
    """pod id -> party. A pod's stored tenant holds claims only; the platform namespaces are
    read once per cluster that has a pod no tenant claims among these (none if all are
    claimed), so a page costs the same whatever its size."""
    pods = list(pods)
    platform: dict[int, frozenset[str]] = {}
    for pod in pods:
        if pod.tenant_id is None and pod.cluster_id not in platform:
            platform[pod.cluster_id] = cluster_platform_namespaces(pod.cluster)
    return {
        pod.pk: pod.tenant.slug
        if pod.tenant is not None
        else unclaimed_pod_party(pod, platform[pod.cluster_id])
        for pod in pods
    }


def pods_of_party(pods: QuerySet[Pod], party: str) -> QuerySet[Pod]:
    """The pods whose party is `party` (a tenant's slug, "platform" or "unclassified")."""
    if party not in (PLATFORM, UNCLASSIFIED_PARTY):
        return pods.filter(tenant__slug=party)
    unclaimed = pods.filter(tenant__isnull=True)
    in_platform = Q(pk__in=[])
    # One query for the clusters holding such pods, then their platform namespaces each, and
    # one for the reservation placeholders outside them (few: one per GPU KAI shares).
    for cluster in Cluster.objects.filter(pk__in=unclaimed.values("cluster_id")):
        namespaces = cluster_platform_namespaces(cluster)
        in_platform |= Q(cluster=cluster, namespace__in=sorted(namespaces))
        in_platform |= Q(pk__in=_reservations(unclaimed.filter(cluster=cluster), namespaces))
    if party == PLATFORM:
        return unclaimed.filter(in_platform)
    return unclaimed.exclude(in_platform)


def _reservations(unclaimed: QuerySet[Pod], platform: frozenset[str]) -> list[int]:
    """The reservation placeholders among one cluster's pods no tenant claims, outside its
    platform namespaces (whose pods are the platform's anyway)."""
    rows = (
        unclaimed.filter(namespace__in=RESERVATION_NAMESPACES)
        .exclude(namespace__in=sorted(platform))
        .values_list("pk", "namespace", "data")
    )
    return [pk for pk, ns, data in rows.iterator() if _is_reservation(ns, data, platform)]
