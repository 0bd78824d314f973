"""Inventory pages: clusters with their sync runs, and GPU nodes."""

from __future__ import annotations

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from inventory.filters import NodeFilter
from inventory.models import Cluster, Node
from inventory.selectors import clusters_with_last_sync


def cluster_list(request: HttpRequest) -> HttpResponse:
    return render(
        request, "inventory/cluster_list.html", {"clusters": clusters_with_last_sync(request.user)}
    )


def cluster_detail(request: HttpRequest, name: str) -> HttpResponse:
    cluster = get_object_or_404(Cluster.objects.visible_to(request.user), name=name)
    runs = cluster.sync_runs.order_by("-started_at", "-id")[:25]
    nodes = Node.objects.visible_to(request.user).filter(cluster=cluster)
    return render(
        request,
        "inventory/cluster_detail.html",
        {"cluster": cluster, "runs": runs, "node_count": nodes.count(),
         "gpu_node_count": nodes.filter(is_gpu_node=True).count()},
    )  # fmt: skip


def node_list(request: HttpRequest) -> HttpResponse:
    queryset = Node.objects.visible_to(request.user).select_related("cluster")
    filterset = NodeFilter(request.GET, queryset=queryset)
    page = Paginator(filterset.qs.order_by("cluster__name", "name"), 50).get_page(
        request.GET.get("page")
    )
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "inventory/node_list.html",
        {"filter": filterset, "page": page, "query": query.urlencode()},
    )
