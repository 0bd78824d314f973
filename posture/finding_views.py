"""Finding pages: the list, one finding, and the security lead's triage (accept one or many,
ticket and owner). Thin: posture.finding_list and posture.finding_detail read, the services
write. A refused form is shown again with what was typed and the error beside its field."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from gpuposture.base.decorators import role_required
from gpuposture.base.roles import TRIAGE_FINDINGS, may
from posture.finding_detail import finding_detail_context, finding_for
from posture.finding_list import finding_list_page
from posture.forms import AcceptForm, BulkAcceptForm, TriageForm
from posture.models import Finding
from posture.rescore import rescore_expired_when_eager
from posture.services import AcceptanceError, finding_accept, finding_reopen
from posture.triage import TriageError, finding_triage_update, findings_accept_bulk


def finding_list(request: HttpRequest) -> HttpResponse:
    rescore_expired_when_eager()
    return _list(request, request.GET, BulkAcceptForm())


def _list(request: HttpRequest, query: QueryDict, bulk: BulkAcceptForm, status: int = 200):
    listing = finding_list_page(request.user, query)
    ticked = {str(i) for i in bulk.data.getlist("ids")} if bulk.is_bound else set()
    return render(
        request,
        "posture/finding_list.html",
        {
            "listing": listing,
            "page": listing.page,
            "query": listing.query,
            "can_accept": may(request.user, TRIAGE_FINDINGS),
            "bulk": bulk,
            "ticked": ticked,
        },
        status=status,
    )


def _get_finding(request: HttpRequest, pk: int) -> Finding:
    finding = finding_for(request.user, pk)
    if finding is None:
        raise Http404("No such finding, or not one you may see.")
    return finding


def finding_detail(request: HttpRequest, pk: int) -> HttpResponse:
    finding = _get_finding(request, pk)
    return _detail(request, finding, None, _triage_form(finding))


def _triage_form(finding: Finding) -> TriageForm:
    owner = finding.owner.get_username() if finding.owner_id else None
    return TriageForm(initial={"ticket_url": finding.ticket_url, "owner": owner})


def _detail(request, finding, accept_form, triage_form, status: int = 200):
    """The finding's page; `accept_form` None: a blank one, or one filled from the earlier
    acceptances that no longer apply (finding_detail.reaccept_initial)."""
    context = finding_detail_context(request.user, finding)
    if accept_form is None:
        accept_form = AcceptForm(initial=context.pop("reaccept_initial"))
    context.update(accept_form=accept_form, triage_form=triage_form)
    return render(request, "posture/finding_detail.html", context, status=status)


@require_POST
@role_required(*TRIAGE_FINDINGS)
def finding_accept_view(request: HttpRequest, pk: int) -> HttpResponse:
    finding = _get_finding(request, pk)
    form = AcceptForm(request.POST)
    if form.is_valid():
        try:
            finding_accept(finding=finding, user=request.user, **form.cleaned_data)
        except AcceptanceError as exc:
            form.add_error(_field_of(str(exc)), str(exc))
    if not form.is_valid():
        # Shown again on the finding's page, with what was typed and the error by its field.
        return _detail(request, finding, form, _triage_form(finding), status=400)
    messages.success(
        request,
        f"Risk accepted for {finding.check_id} until {form.cleaned_data['until']:%Y-%m-%d}.",
    )
    # Back to the tenant page the form was on, when the finding affects that tenant.
    tenant = finding.tenants.filter(slug=request.POST.get("tenant", "")).first()
    if tenant:
        return redirect(f"{reverse('tenant-detail', args=[tenant.slug])}#finding-{finding.pk}")
    return redirect("finding-detail", pk=finding.pk)


@require_POST
@role_required(*TRIAGE_FINDINGS)
def finding_reopen_view(request: HttpRequest, pk: int) -> HttpResponse:
    """Withdraw a risk acceptance: the finding counts in the score again (audited)."""
    finding = _get_finding(request, pk)
    if finding.status == Finding.Status.ACCEPTED:
        finding_reopen(finding=finding, user=request.user)
        messages.success(request, f"Acceptance withdrawn: {finding.check_id} is open again.")
    return redirect("finding-detail", pk=finding.pk)


def _field_of(refusal: str) -> str | None:
    """The field a service refusal is about, to show it there (None: about the finding)."""
    if "expiry" in refusal:
        return "until"
    return "reason" if "reason" in refusal else None


@require_POST
@role_required(*TRIAGE_FINDINGS)
def finding_triage_view(request: HttpRequest, pk: int) -> HttpResponse:
    finding = _get_finding(request, pk)
    form = TriageForm(request.POST)
    if form.is_valid():
        try:
            finding_triage_update(finding=finding, user=request.user, **form.cleaned_data)
        except TriageError as exc:
            form.add_error("ticket_url", str(exc))
    if not form.is_valid():
        return _detail(request, finding, AcceptForm(), form, status=400)
    messages.success(request, "Ticket and owner saved.")
    return redirect("finding-detail", pk=finding.pk)


@require_POST
@role_required(*TRIAGE_FINDINGS)
def finding_bulk_accept_view(request: HttpRequest) -> HttpResponse:
    """Accept the ticked findings, each by the rules of one, then back to the same list."""
    back = QueryDict(request.POST.get("back", ""))
    form = BulkAcceptForm(request.POST)
    if not form.is_valid():
        return _list(request, back, form, status=400)
    ids = form.cleaned_data.pop("ids")
    # Only findings the lead may see (all of them, but the rule is the same as everywhere).
    findings = Finding.objects.visible_to(request.user).filter(pk__in=ids).order_by("id")
    try:
        result = findings_accept_bulk(findings=findings, user=request.user, **form.cleaned_data)
    except TriageError as exc:
        form.add_error("ids", str(exc))
        return _list(request, back, form, status=400)
    if result.accepted:
        messages.success(
            request,
            f"Risk accepted for {len(result.accepted)} finding"
            f"{'s' if len(result.accepted) != 1 else ''} until "
            f"{form.cleaned_data['until']:%Y-%m-%d}.",
        )
    for finding, why in result.refused:
        messages.error(request, f"#{finding.pk} {finding.check_id} not accepted: {why}.")
    url = reverse("finding-list")
    return redirect(f"{url}?{back.urlencode()}" if back else url)
