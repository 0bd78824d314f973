"""Inventory coverage of a cluster's GPU nodes: what share of them has a known firmware (VBIOS)
version. The Kubernetes API never shows the VBIOS (only an `nvidia-smi -q -x` import does), so
this is coverage shown on the cluster page, its API and checklist item 3, not a finding."""

from __future__ import annotations

from django.db.models import Count, IntegerField, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce

from inventory.models import Cluster, Node


def _count(condition: Q, nodes: QuerySet[Node]) -> Coalesce:
    rows = (
        nodes.filter(condition, cluster=OuterRef("pk"), is_gpu_node=True)
        .order_by()
        .values("cluster")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return Coalesce(Subquery(rows, output_field=IntegerField()), Value(0))


def with_coverage(
    clusters: QuerySet[Cluster], visible: QuerySet[Node] | None = None
) -> QuerySet[Cluster]:
    """The clusters with `gpu_node_count` and `firmware_known_count` (subqueries: no join that
    a later filter could multiply, no query per cluster), counting the nodes of `visible`
    only where given: a tenant viewer's counts are of the nodes they may see (their cluster
    page and checklist count so), not the whole cluster's, which would tell them how many
    GPU nodes run others' work."""
    nodes = Node.objects.order_by()
    if visible is not None:
        nodes = nodes.filter(pk__in=visible.order_by().values("pk"))
    return clusters.annotate(
        gpu_node_count=_count(Q(), nodes),
        firmware_known_count=_count(~Q(firmware_version=""), nodes),
    )


def cluster_coverage_counts(cluster: Cluster) -> tuple[int, int]:
    """(GPU nodes, of which with a known firmware version) of one cluster."""
    if hasattr(cluster, "gpu_node_count"):
        return cluster.gpu_node_count, cluster.firmware_known_count
    nodes = Node.objects.filter(cluster=cluster, is_gpu_node=True)
    counts = nodes.aggregate(gpu=Count("pk"), known=Count("pk", filter=~Q(firmware_version="")))
    return counts["gpu"], counts["known"]
