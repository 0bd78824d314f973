"""Who a workload belongs to, in the words the node page and the node API's `dra_devices[]`
use (inventory.platform.unclaimed_party): its tenant's slug, or for a namespace no tenant
claims "platform" for a platform namespace and "unclassified" for any other (DESIGN §3, fail
closed: nothing unknown is the platform's). For the workloads API's `party` and `?party=`."""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Q, QuerySet

from inventory.models import Cluster, Pod
from inventory.platform import (
    PLATFORM,
    UNCLASSIFIED_PARTY,
    cluster_platform_namespaces,
    unclaimed_party,
)


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
        else unclaimed_party(pod.namespace, platform[pod.cluster_id])
        for pod in pods
    }


def pods_of_party(pods: QuerySet[Pod], party: str) -> QuerySet[Pod]:
    """The pods whose party is `party` (a tenant's slug, "platform" or "unclassified")."""
    if party not in (PLATFORM, UNCLASSIFIED_PARTY):
        return pods.filter(tenant__slug=party)
    unclaimed = pods.filter(tenant__isnull=True)
    in_platform = Q(pk__in=[])
    # One query for the clusters holding such pods, then their platform namespaces each.
    for cluster in Cluster.objects.filter(pk__in=unclaimed.values("cluster_id")):
        namespaces = cluster_platform_namespaces(cluster)
        in_platform |= Q(cluster=cluster, namespace__in=sorted(namespaces))
    if party == PLATFORM:
        return unclaimed.filter(in_platform)
    return unclaimed.exclude(in_platform)
