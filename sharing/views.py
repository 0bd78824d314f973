"""Sharing-request pages: the list, asking, one request with its decision, the approvals queue.
Thin: the services enforce roles and four eyes; these only show what they decide."""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from gpuposture.base.labels import words
from gpuposture.base.roles import (
    DECIDE_SHARING,
    REVOKE_SHARING,
    may,
)
from inventory.presenter import hidden_scope_for, present
from sharing.context import sharing_request_context
from sharing.filters import SharingRequestFilter
from sharing.forms import DecisionForm, SharingRequestForm
from sharing.services import (
    SharingRequestError,
    may_decide,
    requestable_tenants,
    sharing_request_approve,
    sharing_request_create,
    sharing_request_deny,
    sharing_request_revoke,
)
from tenants.models import SharingRequest

_RELATED = ("tenant", "tenant__trust_class", "cluster", "requested_by", "decided_by", "revoked_by")


def _requests(user) -> object:
    return SharingRequest.objects.visible_to(user).select_related(*_RELATED)


def sharing_request_list(request: HttpRequest) -> HttpResponse:
    filterset = SharingRequestFilter(
        request.GET or None, queryset=_requests(request.user), request=request
    )
    page = Paginator(filterset.qs, 50).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "sharing/sharing_request_list.html",
        {
            "filter": filterset,
            "page": page,
            "query": query.urlencode(),
            "now": timezone.now(),
            "filtered": bool(request.GET),
            "can_request": requestable_tenants(request.user).exists(),
        },
    )


def approvals_queue(request: HttpRequest) -> HttpResponse:
    pending = _requests(request.user).pending().order_by("requested_at", "id")
    page = Paginator(pending, 50).get_page(request.GET.get("page"))
    return render(
        request,
        "sharing/approvals_queue.html",
        {"page": page, "can_decide": may(request.user, DECIDE_SHARING)},
    )


def sharing_request_new(request: HttpRequest) -> HttpResponse:
    tenants = requestable_tenants(request.user)
    form = SharingRequestForm(
        request.POST or None, user=request.user, tenants=tenants, initial=request.GET.dict()
    )
    if request.method == "POST" and form.is_valid():
        try:
            created = sharing_request_create(user=request.user, **form.cleaned_data)
        except SharingRequestError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Request #{created.pk} sent to the approvals queue.")
            return redirect("sharing-request-detail", pk=created.pk)
    return render(
        request,
        "sharing/sharing_request_form.html",
        {"form": form, "has_tenants": tenants.exists()},
    )


def sharing_request_detail(request: HttpRequest, pk: int) -> HttpResponse:
    item = get_object_or_404(_requests(request.user), pk=pk)
    return _detail(request, item, _decision_form(item))


def _decision_form(item: SharingRequest, data=None) -> DecisionForm:
    trust_class = item.tenant.trust_class
    return DecisionForm(
        data, limit_days=trust_class.approval_expiry_days, class_slug=words(trust_class.slug)
    )


def _detail(
    request: HttpRequest,
    item: SharingRequest,
    form: DecisionForm,
    status: int = 200,
):
    now = timezone.now()
    own = item.requested_by_id == request.user.pk
    # Shown, never saved: a tenant's viewer reads the reasons with other tenants' names hidden.
    present(hidden_scope_for(request.user), item)
    return render(
        request,
        "sharing/sharing_request_detail.html",
        {
            "item": item,
            "state": item.state(now),
            "own_request": own,
            "can_decide": item.status == SharingRequest.Status.PENDING
            and may_decide(request.user, item),
            "can_revoke": item.status == SharingRequest.Status.APPROVED
            and may(request.user, REVOKE_SHARING),
            "decision_form": form,
            # Judged now, as a decision would be: the class may have changed since the ask.
            "policy": item.policy(words),
            # Beside the request: the nodes it covers, their tenants, findings, earlier asks.
            **sharing_request_context(item, request.user),
        },
        status=status,
    )


@require_POST
def sharing_request_decide(request: HttpRequest, pk: int) -> HttpResponse:
    item = get_object_or_404(_requests(request.user), pk=pk)
    form = _decision_form(item, request.POST)
    if form.is_valid():
        data = form.cleaned_data
        try:
            if data["decision"] == "approve":
                sharing_request_approve(
                    request=item,
                    user=request.user,
                    reason=data["reason"],
                    expires_in_days=data["expires_in_days"],
                )
            elif data["decision"] == "deny":
                sharing_request_deny(request=item, user=request.user, reason=data["reason"])
            else:
                sharing_request_revoke(request=item, user=request.user, reason=data["reason"])
        except SharingRequestError as exc:
            form.add_error("expires_in_days" if "days" in str(exc) else None, str(exc))
    if not form.is_valid():
        # Shown again with what was typed and the error beside its field.
        item.refresh_from_db()
        return _detail(request, item, form, status=400)
    messages.success(request, _confirmation(item, form.cleaned_data["decision"]))
    return redirect("sharing-request-detail", pk=pk)


def _confirmation(item: SharingRequest, decision: str) -> str:
    """The message after a decision; an approval says what it covers, as the page did."""
    if decision == "approve" and item.scope_note():
        return f"Request #{item.pk}: approve recorded, {item.scope_note()}."
    return f"Request #{item.pk}: {decision} recorded."
