"""Inventory pages: clusters (runs, progress, drift, registration) and GPU nodes."""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from gpuposture.base.decorators import role_required
from gpuposture.base.roles import PLATFORM_ENGINEER, has_role
from inventory.charts import patch_heatmap
from inventory.filters import NodeFilter
from inventory.forms import ClusterForm
from inventory.models import Bulletin, Cluster, Node
from inventory.selectors import PATCH_COMPONENTS, clusters_with_last_sync, patch_overview
from inventory.services import SyncBusy, cluster_save, cluster_sync_request


def cluster_list(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "inventory/cluster_list.html",
        {
            "clusters": clusters_with_last_sync(request.user),
            "can_edit": has_role(request.user, PLATFORM_ENGINEER),
        },
    )


def cluster_detail_context(request: HttpRequest, name: str) -> dict:
    """What the cluster page shows from the inventory (posture adds its checklist)."""
    cluster = get_object_or_404(Cluster.objects.visible_to(request.user), name=name)
    nodes = Node.objects.visible_to(request.user).filter(cluster=cluster)
    return {
        "cluster": cluster,
        "runs": cluster.sync_runs.order_by("-started_at", "-id")[:25],
        "drift_events": cluster.drift_events.order_by("-detected_at", "-id")[:50],
        "operator_policies": cluster.kube_objects.filter(kind="gpu_operator_policy"),
        "node_count": nodes.count(),
        "gpu_node_count": nodes.filter(is_gpu_node=True).count(),
        "can_edit": has_role(request.user, PLATFORM_ENGINEER),
    }


@role_required(PLATFORM_ENGINEER)
def cluster_edit(request: HttpRequest, name: str | None = None) -> HttpResponse:
    cluster = get_object_or_404(Cluster, name=name) if name else None
    form = ClusterForm(request.POST or None, instance=cluster)
    if request.method == "POST" and form.is_valid():
        saved = cluster_save(cluster=form.save(commit=False))
        messages.success(request, f"Cluster {saved.name} saved.")
        return redirect("cluster-detail", name=saved.name)
    return render(request, "inventory/cluster_form.html", {"form": form, "cluster": cluster})


@require_POST
@role_required(PLATFORM_ENGINEER)
def cluster_sync_now(request: HttpRequest, name: str) -> HttpResponse:
    cluster = get_object_or_404(Cluster, name=name)
    try:
        run = cluster_sync_request(cluster=cluster, trigger="page")
    except SyncBusy as exc:
        messages.warning(request, str(exc))
    else:
        messages.info(request, f"Sync run {run.pk} started.")
    return redirect("cluster-detail", name=cluster.name)


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


def bulletin_list(request: HttpRequest) -> HttpResponse:
    bulletins = Bulletin.objects.visible_to(request.user).prefetch_related("fixes")
    return render(request, "inventory/bulletin_list.html", {"bulletins": bulletins})


def bulletin_detail(request: HttpRequest, pk: int) -> HttpResponse:
    bulletin = get_object_or_404(Bulletin.objects.visible_to(request.user), pk=pk)
    affected = [
        n
        for n in Node.objects.visible_to(request.user)
        .filter(is_gpu_node=True)
        .select_related("cluster")
        if any(e.get("advisory_id") == bulletin.tracking_id for e in n.patch_exposures)
    ]
    return render(
        request, "inventory/bulletin_detail.html", {"bulletin": bulletin, "affected": affected}
    )


def patch_status(request: HttpRequest) -> HttpResponse:
    overview = patch_overview(request.user)
    pools = list(overview["pools"])
    chart = None
    if pools:
        below = [[overview["pools"][p]["components"][c] for c in PATCH_COMPONENTS] for p in pools]
        chart = patch_heatmap(pools, list(PATCH_COMPONENTS), below)
    return render(request, "inventory/patch_status.html", {**overview, "chart": chart})
