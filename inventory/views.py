"""Inventory pages: clusters (runs, progress, drift, registration) and GPU nodes."""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from gpuposture.base.decorators import role_required
from gpuposture.base.labels import words
from gpuposture.base.querysets import sees_every_row
from gpuposture.base.queue import QueueUnavailable
from gpuposture.base.roles import (
    DECIDE_BULLETINS,
    EDIT_CLUSTERS,
    EDIT_PATCH_SLA,
    IMPORT_BULLETINS,
    may,
)
from inventory.bulletins.imports import bulletin_urls_import_request, bulletins_import_recorded
from inventory.charts import patch_heatmap
from inventory.filters import BulletinFilter, NodeFilter
from inventory.forms import BulletinImportForm, ClusterForm, PatchSlaForm
from inventory.models import Bulletin, BulletinImport, BulletinRevision, Cluster, Node, SyncRun
from inventory.patching.sla import patch_sla_rows, patch_sla_save
from inventory.presenter import hidden_scope_for, present, present_all
from inventory.selectors import (
    PATCH_COMPONENTS,
    clusters_with_last_sync,
    node_detail_context,
    patch_overview,
    patch_rollout,
)
from inventory.services import NoStoredSource, SyncBusy, cluster_save, cluster_sync_request
from inventory.sync_summary import sync_run_summary

RUN_MESSAGE_LEVELS: dict[str, int] = {
    SyncRun.Status.SUCCEEDED: messages.SUCCESS,
    SyncRun.Status.FAILED: messages.ERROR,
}

HELD_MESSAGE = (
    "{n} revision(s) weaken a bulletin (a lower fixed version, or a product, branch or CVE "
    "dropped): held, not applied, until a security lead confirms them under Bulletins."
)


def cluster_list(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "inventory/cluster_list.html",
        {
            "clusters": clusters_with_last_sync(request.user),
            "can_edit": may(request.user, EDIT_CLUSTERS),
        },
    )


@role_required(*EDIT_CLUSTERS)
def cluster_edit(request: HttpRequest, name: str | None = None) -> HttpResponse:
    cluster = get_object_or_404(Cluster, name=name) if name else None
    form = ClusterForm(request.POST or None, instance=cluster)
    if request.method == "POST" and form.is_valid():
        saved = cluster_save(cluster=form.save(commit=False), actor=request.user)
        messages.success(request, f"Cluster {saved.name} saved.")
        return redirect("cluster-detail", name=saved.name)
    return render(request, "inventory/cluster_form.html", {"form": form, "cluster": cluster})


@require_POST
@role_required(*EDIT_CLUSTERS)
def cluster_sync_now(request: HttpRequest, name: str) -> HttpResponse:
    cluster = get_object_or_404(Cluster, name=name)
    try:
        run = cluster_sync_request(cluster=cluster, trigger="page")
    except SyncBusy as exc:
        messages.warning(request, str(exc))
    except (NoStoredSource, QueueUnavailable) as exc:
        messages.error(request, str(exc))
    else:
        # Without a broker the sync ran in-process and has already ended: say how.
        run.refresh_from_db()
        level = RUN_MESSAGE_LEVELS.get(run.status, messages.INFO)
        summary = sync_run_summary(run)
        messages.add_message(request, level, summary[:1].upper() + summary[1:])
    return redirect("cluster-detail", name=cluster.name)


def node_list(request: HttpRequest) -> HttpResponse:
    queryset = Node.objects.visible_to(request.user).select_related("cluster")
    filterset = NodeFilter(request.GET, queryset=queryset, request=request)
    page = Paginator(filterset.qs.order_by("cluster__name", "name"), 50).get_page(
        request.GET.get("page")
    )
    present_all(hidden_scope_for(request.user), page.object_list)
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "inventory/node_list.html",
        {"filter": filterset, "page": page, "query": query.urlencode()},
    )


def node_detail(request: HttpRequest, cluster: str, name: str) -> HttpResponse:
    node = get_object_or_404(
        Node.objects.visible_to(request.user).select_related("cluster"),
        cluster__name=cluster,
        name=name,
    )
    present(hidden_scope_for(request.user), node)
    return render(request, "inventory/node_detail.html", node_detail_context(request.user, node))


def bulletin_list(request: HttpRequest) -> HttpResponse:
    bulletins = Bulletin.objects.visible_to(request.user).prefetch_related("fixes")
    filterset = BulletinFilter(request.GET, queryset=bulletins)
    context = {
        "filter": filterset,
        "bulletins": filterset.qs,
        "filtered": any(request.GET.get(f) for f in filterset.form.fields),
        "imports": BulletinImport.objects.visible_to(request.user)[:10],
        "pending": BulletinRevision.objects.visible_to(request.user).filter(
            status=BulletinRevision.Status.PENDING
        )[:50],
        "can_import": may(request.user, IMPORT_BULLETINS),
    }
    return render(request, "inventory/bulletin_list.html", context)


@role_required(*IMPORT_BULLETINS)
def bulletin_import_view(request: HttpRequest) -> HttpResponse:
    form = BulletinImportForm(request.POST or None, request.FILES or None)
    result = None
    if request.method == "POST" and form.is_valid():
        actor = request.user
        uploads = [(f.name[:200], f.read()) for f in form.cleaned_data["files"]]
        if uploads:
            _record, result = bulletins_import_recorded(
                trigger="page", actor=actor, uploads=uploads
            )
            if result.held:
                messages.warning(request, HELD_MESSAGE.format(n=len(result.held)))
        if form.cleaned_data["urls"]:
            # A feed may list hundreds of documents: a worker fetches them.
            try:
                record = bulletin_urls_import_request(
                    urls=form.cleaned_data["urls"], trigger="page", actor=actor
                )
            except QueueUnavailable as exc:
                messages.error(request, str(exc))
            else:
                started = f"Import {record.pk} of the URLs started; see Recent imports."
                messages.info(request, started)
        if result is None or (result.landed and not result.refused):
            if result is not None:
                messages.success(
                    request,
                    f"{len(result.imported) + len(result.replaced)} "
                    "bulletin(s) imported from the files.",
                )
            return redirect("bulletin-list")
    return render(request, "inventory/bulletin_import.html", {"form": form, "result": result})


def bulletin_detail(request: HttpRequest, pk: int) -> HttpResponse:
    bulletin = get_object_or_404(Bulletin.objects.visible_to(request.user), pk=pk)
    affected = [
        n
        for n in Node.objects.visible_to(request.user)
        .filter(is_gpu_node=True)
        .select_related("cluster")
        if any(e.get("advisory_id") == bulletin.tracking_id for e in n.patch_exposures)
    ]
    context = {
        "bulletin": bulletin,
        "affected": affected,
        "pending": BulletinRevision.objects.visible_to(request.user).filter(
            tracking_id=bulletin.tracking_id, status=BulletinRevision.Status.PENDING
        ),
        "can_delete": may(request.user, DECIDE_BULLETINS),
    }
    return render(request, "inventory/bulletin_detail.html", context)


def patch_status(request: HttpRequest) -> HttpResponse:
    overview = patch_overview(request.user)
    pools = list(overview["pools"])
    chart = None
    if pools:
        below = [[overview["pools"][p]["components"][c] for c in PATCH_COMPONENTS] for p in pools]
        chart = patch_heatmap(pools, [words(c) for c in PATCH_COMPONENTS], below)
    context = {
        **overview,
        "chart": chart,
        "sla": patch_sla_rows(),
        "can_edit_sla": may(request.user, EDIT_PATCH_SLA),
        # A rollout names every pool of a cluster: for those who read the whole fleet.
        "rollout": patch_rollout(request.user) if sees_every_row(request.user, Node) else None,
    }
    return render(request, "inventory/patch_status.html", context)


@role_required(*EDIT_PATCH_SLA)
def patch_sla_edit(request: HttpRequest) -> HttpResponse:
    form = PatchSlaForm(request.POST or None, rows=patch_sla_rows())
    if request.method == "POST" and form.is_valid():
        patch_sla_save(days=form.cleaned_data, actor=request.user.get_username())
        messages.success(request, "Patch SLA saved; posture is being re-scored.")
        return redirect("patch-status")
    return render(request, "inventory/patch_sla_form.html", {"form": form})
