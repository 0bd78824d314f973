"""Page /enforcement/: a cluster's admission policy pack, its preview, diff and downloads."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from enforcement.api import PACK_READERS_ONLY
from enforcement.inputs import DIALECTS, MODES
from enforcement.packs import PackError
from enforcement.render import kustomize_zip
from enforcement.report import pack_report
from gpuposture.base.roles import has_any_role, reads_all_posture
from inventory.models import Cluster


def enforcement_page(request: HttpRequest) -> HttpResponse:
    if not has_any_role(request.user):
        raise PermissionDenied("You need a gpuposture role to see admission policy packs.")
    clusters = list(Cluster.objects.visible_to(request.user).order_by("name"))
    dialect = request.GET.get("dialect", "vap")
    mode = request.GET.get("mode", "audit")
    name = request.GET.get("cluster") or (clusters[0].name if clusters else "")
    context: dict = {
        "clusters": clusters,
        "dialects": DIALECTS,
        "modes": MODES,
        "dialect": dialect,
        "mode": mode,
        "selected": name,
        "full": reads_all_posture(request.user),
    }
    if not clusters:
        return render(request, "enforcement/page.html", context)
    cluster = next((c for c in clusters if c.name == name), None)
    if cluster is None:
        # A filter naming a cluster the user cannot see reads like one that does not exist.
        context["error"] = f"No cluster named {name!r} that you can see."
        return render(request, "enforcement/page.html", context)
    download = request.GET.get("download", "")
    if download and not context["full"]:
        raise PermissionDenied(PACK_READERS_ONLY)
    try:
        # Only the readers of the whole pack generate a stored one (a diff is theirs to see).
        report = pack_report(
            cluster, dialect=dialect, mode=mode, user=request.user, record=context["full"]
        )
    except PackError as exc:
        context["error"] = str(exc)
        return render(request, "enforcement/page.html", context, status=400)
    stem = f"gpuposture-{cluster.name}-{dialect}-{mode}"
    if download == "yaml":
        response = HttpResponse(report.yaml, content_type="application/yaml; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{stem}.yaml"'
        return response
    if download == "zip":
        response = HttpResponse(kustomize_zip(report.objects, stem), content_type="application/zip")
        response["Content-Disposition"] = f'attachment; filename="{stem}.zip"'
        return response
    if download:
        context["error"] = "download must be yaml or zip."
        return render(request, "enforcement/page.html", context, status=400)
    context["report"] = report
    context["diff_added"] = sum(1 for line in report.diff[2:] if line.startswith("+"))
    context["diff_removed"] = sum(1 for line in report.diff[2:] if line.startswith("-"))
    context["kinds"] = _kind_counts(report.objects)
    return render(request, "enforcement/page.html", context)


def _kind_counts(objects: list[dict]) -> list[tuple[str, int]]:
    counts: dict[str, int] = {}
    for obj in objects:
        counts[obj["kind"]] = counts.get(obj["kind"], 0) + 1
    return sorted(counts.items())
