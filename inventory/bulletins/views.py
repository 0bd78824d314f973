"""Bulletin pages for a security lead's decisions: a held revision (what it would change, why
it weakens the bulletin; confirm or reject) and deleting a bulletin."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from gpuposture.base.decorators import role_required
from gpuposture.base.roles import SECURITY_LEAD, has_role
from inventory.bulletins.decisions import (
    RevisionDecisionError,
    bulletin_delete,
    bulletin_revision_confirm,
    bulletin_revision_reject,
)
from inventory.models import Bulletin, BulletinRevision

DELETE_CONFIRMATION = "delete"


def revision_detail(request: HttpRequest, pk: int) -> HttpResponse:
    revision = get_object_or_404(BulletinRevision.objects.visible_to(request.user), pk=pk)
    stored = Bulletin.objects.filter(tracking_id=revision.tracking_id).first()
    context = {
        "revision": revision,
        "stored": stored,
        "can_decide": revision.status == BulletinRevision.Status.PENDING
        and has_role(request.user, SECURITY_LEAD),
    }
    return render(request, "inventory/bulletin_revision.html", context)


@require_POST
@role_required(SECURITY_LEAD)
def revision_decide(request: HttpRequest, pk: int) -> HttpResponse:
    revision = get_object_or_404(BulletinRevision.objects.visible_to(request.user), pk=pk)
    decision, note = request.POST.get("decision"), request.POST.get("note", "")
    try:
        if decision == "confirm":
            record = bulletin_revision_confirm(
                revision=revision, user=request.user, trigger="page", note=note
            )
            messages.success(
                request,
                f"Revision {revision.version} of {revision.tracking_id} applied (import "
                f"{record.pk}); the clusters are re-scored.",
            )
        elif decision == "reject":
            bulletin_revision_reject(revision=revision, user=request.user, note=note)
            messages.success(request, f"Revision {revision.version} rejected: never applied.")
        else:
            messages.error(request, "Choose confirm or reject.")
    except RevisionDecisionError as exc:
        messages.error(request, f"Nothing was changed: {exc}.")
    return redirect("bulletin-revision", pk=revision.pk)


@require_POST
@role_required(SECURITY_LEAD)
def bulletin_delete_view(request: HttpRequest, pk: int) -> HttpResponse:
    bulletin = get_object_or_404(Bulletin.objects.visible_to(request.user), pk=pk)
    if request.POST.get("confirm") != DELETE_CONFIRMATION:
        messages.error(request, "Nothing was deleted: confirm the deletion with its button.")
        return redirect("bulletin-detail", pk=bulletin.pk)
    tracking_id = bulletin.tracking_id
    record = bulletin_delete(bulletin=bulletin, user=request.user, trigger="page")
    messages.success(
        request,
        f"Bulletin {tracking_id} deleted (recorded as import {record.pk}); the clusters are "
        "re-scored.",
    )
    return redirect("bulletin-list")
