"""Provider pages: the list and comparison, one provider, an assessment to fill or review, its
print view, exports, the CSV import, and evidence downloads. Thin: the services in
providers.assessments decide who may do what."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from gpuposture.base.decorators import role_required
from gpuposture.base.roles import EDIT_PROVIDERS, REVIEW_ASSESSMENTS, may
from providers import charts
from providers.api import sees_full_provider
from providers.assessments import (
    AssessmentError,
    answers_save,
    assessment_attest,
    assessment_review,
    assessment_score,
    assessment_start,
    assessment_submit,
    evidence_attach,
    evidence_remove,
    submission_problems,
)
from providers.exports import assessment_export, import_answers_csv
from providers.forms import AttestationForm, ImportForm, ProviderForm
from providers.models import Assessment, EvidenceFile, Provider
from providers.presentation import assessment_sections, comparison_for, comparison_rows
from providers.selectors import provider_standing, providers_for
from providers.services import provider_save

MAX_COMPARED = 6
YES_NO_LABELS = (("yes", "Yes"), ("partial", "Partly"), ("no", "No"), ("na", "Not applicable"))


def _assessments(user):
    return Assessment.objects.visible_to(user).select_related(
        "provider", "questionnaire", "submitted_by", "reviewed_by"
    )


def provider_list(request: HttpRequest) -> HttpResponse:
    now = timezone.now()
    rows = [(p, provider_standing(p, now)) for p in providers_for(request.user)]
    return render(
        request,
        "providers/provider_list.html",
        {
            "rows": rows,
            "full": sees_full_provider(request.user),
            "can_edit": may(request.user, EDIT_PROVIDERS),
        },
    )


def provider_compare(request: HttpRequest) -> HttpResponse:
    if not sees_full_provider(request.user):
        raise PermissionDenied("Comparing providers needs a posture or procurement role.")
    slugs = request.GET.getlist("providers")[:MAX_COMPARED]
    comparison, missing = comparison_for(request.user, slugs)
    return render(
        request,
        "providers/provider_compare.html",
        {
            "comparison": comparison,
            "missing": missing,
            "providers": providers_for(request.user),
            "chosen": slugs,
            "rows": comparison_rows(comparison) if comparison else [],
            "radar": charts.comparison_radar(comparison) if comparison else None,
        },
    )


def provider_detail(request: HttpRequest, slug: str) -> HttpResponse:
    provider = get_object_or_404(providers_for(request.user), slug=slug)
    full = sees_full_provider(request.user)
    return render(
        request,
        "providers/provider_detail.html",
        {
            "provider": provider,
            "standing": provider_standing(provider, timezone.now()),
            "full": full,
            "assessments": _assessments(request.user).filter(provider=provider) if full else [],
            "can_edit": may(request.user, EDIT_PROVIDERS),
            # Procurement reads providers but opens no cluster: a link would lead to a 404.
            "openable_clusters": set(
                provider.clusters.visible_to(request.user).values_list("pk", flat=True)
            ),
        },
    )


@role_required(*EDIT_PROVIDERS)
def provider_edit(request: HttpRequest, slug: str | None = None) -> HttpResponse:
    provider = get_object_or_404(Provider, slug=slug) if slug else None
    form = ProviderForm(request.POST or None, instance=provider)
    if request.method == "POST" and form.is_valid():
        saved = provider_save(
            provider=provider,
            values=form.provider_values(),
            contacts=form.contact_rows(),
            actor=request.user,
        )
        messages.success(request, f"Provider {saved.name} saved.")
        return redirect("provider-detail", slug=saved.slug)
    return render(request, "providers/provider_form.html", {"form": form, "provider": provider})


@require_POST
def assessment_new(request: HttpRequest, slug: str) -> HttpResponse:
    provider = get_object_or_404(Provider.objects.visible_to(request.user), slug=slug)
    try:
        assessment = assessment_start(provider=provider, user=request.user)
    except AssessmentError as exc:
        messages.error(request, str(exc))
        return redirect("provider-detail", slug=slug)
    return redirect("assessment-detail", pk=assessment.pk)


def assessment_detail(request: HttpRequest, pk: int) -> HttpResponse:
    assessment = get_object_or_404(_assessments(request.user), pk=pk)
    result = assessment_score(assessment)
    fill = assessment.editable and may(request.user, EDIT_PROVIDERS)
    review = (
        assessment.status == Assessment.Status.SUBMITTED
        and may(request.user, REVIEW_ASSESSMENTS)
        and assessment.submitted_by_id != request.user.pk
    )
    return render(
        request,
        "providers/assessment_detail.html",
        {
            "assessment": assessment,
            "result": result,
            "sections": assessment_sections(assessment, result),
            "problems": submission_problems(assessment, result) if fill else [],
            "fill": fill,
            "review": review,
            "attestation": AttestationForm(instance=assessment) if fill else None,
            "import_form": ImportForm() if fill else None,
            "yes_no": YES_NO_LABELS,
        },
    )


def assessment_print(request: HttpRequest, pk: int) -> HttpResponse:
    assessment = get_object_or_404(_assessments(request.user), pk=pk)
    result = assessment_score(assessment)
    return render(
        request,
        "providers/assessment_print.html",
        {
            "assessment": assessment,
            "result": result,
            "sections": assessment_sections(assessment, result),
            "now": timezone.now(),
        },
    )


def _answers_from_post(request: HttpRequest, assessment: Assessment) -> dict[str, dict]:
    answers: dict[str, dict] = {}
    for question in assessment_sections(assessment, None, flat=True):
        qid = question["id"]
        fields = {}
        for name in ("value", "note", "evidence_url"):
            key = f"{name}-{qid}"
            if key in request.POST:
                fields[name] = request.POST[key]
        if fields:
            answers[qid] = fields
    return answers


@require_POST
def assessment_save(request: HttpRequest, pk: int) -> HttpResponse:
    """The whole form at once (the page without its script), evidence files included."""
    assessment = get_object_or_404(_assessments(request.user), pk=pk)
    try:
        result = answers_save(
            assessment=assessment,
            user=request.user,
            answers=_answers_from_post(request, assessment),
        )
    except AssessmentError as exc:
        messages.error(request, str(exc))
        return redirect("assessment-detail", pk=pk)
    for qid, problem in result.errors.items():
        messages.error(request, f"{qid}: {problem}")
    attached = _attach_files(request, assessment)
    form = AttestationForm(request.POST, instance=assessment)
    if form.is_valid() and form.cleaned_data.get("responder_name"):
        assessment_attest(assessment=assessment, user=request.user, **form.cleaned_data)
    messages.success(request, _saved_message(len(result.saved), attached))
    if request.POST.get("then") == "submit":
        return assessment_submit_view(request, pk)
    return redirect("assessment-detail", pk=pk)


def _attach_files(request: HttpRequest, assessment: Assessment) -> int:
    """Attach each uploaded file on its own: a refused one is named with its question and
    does not undo the answers or the other files."""
    attached = 0
    for field_name, upload in request.FILES.items():
        if not field_name.startswith("file-"):
            continue
        question_id = field_name[len("file-") :]
        try:
            evidence_attach(
                assessment=assessment,
                question_id=question_id,
                user=request.user,
                name=upload.name or "evidence",
                content_type=upload.content_type or "",
                data=upload.read(),
            )
        except (AssessmentError, ValueError) as exc:
            messages.error(request, f"{question_id}: file {upload.name!r} was not attached: {exc}.")
        else:
            attached += 1
    return attached


def _saved_message(saved: int, attached: int) -> str:
    if not saved and not attached:
        return "No changes to save: every answer was already saved."
    if not saved:
        # Autosave had already stored every answer; say so rather than "0 answer(s) saved".
        return f"{attached} file(s) attached; every answer was already saved."
    files = f", {attached} file(s) attached" if attached else ""
    return f"{saved} answer(s) saved{files}."


@require_POST
def assessment_submit_view(request: HttpRequest, pk: int) -> HttpResponse:
    assessment = get_object_or_404(_assessments(request.user), pk=pk)
    try:
        assessment_submit(assessment=assessment, user=request.user)
    except AssessmentError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, "Submitted: a security lead will review it.")
    return redirect("assessment-detail", pk=pk)


@require_POST
def assessment_review_view(request: HttpRequest, pk: int) -> HttpResponse:
    assessment = get_object_or_404(_assessments(request.user), pk=pk)
    comments = {
        key[len("comment-") :]: value[:2000]
        for key, value in request.POST.items()
        if key.startswith("comment-") and value.strip()
    }
    decision = request.POST.get("decision")
    try:
        assessment_review(
            assessment=assessment,
            user=request.user,
            accept=decision == "accept",
            comment=request.POST.get("review_comment", "")[:4000],
            answer_comments=comments,
        )
    except AssessmentError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, "Accepted." if decision == "accept" else "Sent back.")
    return redirect("assessment-detail", pk=pk)


def assessment_download(request: HttpRequest, pk: int, fmt: str) -> HttpResponse:
    assessment = get_object_or_404(_assessments(request.user), pk=pk)
    if fmt not in ("csv", "json"):
        raise Http404
    return assessment_export(assessment, fmt)


@require_POST
def assessment_import(request: HttpRequest, pk: int) -> HttpResponse:
    assessment = get_object_or_404(_assessments(request.user), pk=pk)
    form = ImportForm(request.POST, request.FILES)
    if not form.is_valid():
        messages.error(request, "Choose the CSV file to import.")
        return redirect("assessment-detail", pk=pk)
    try:
        outcome = import_answers_csv(
            assessment=assessment, user=request.user, upload=form.cleaned_data["file"]
        )
    except AssessmentError as exc:
        messages.error(request, str(exc))
        return redirect("assessment-detail", pk=pk)
    messages.success(request, f"{len(outcome['saved'])} answer(s) imported.")
    for error in outcome["errors"][:50]:
        where = f"row {error['row']}" if error["row"] else error["question_id"]
        messages.error(request, f"{where}: {error['message']}")
    return redirect("assessment-detail", pk=pk)


@require_POST
@role_required(*EDIT_PROVIDERS)
def evidence_remove_view(request: HttpRequest, pk: int, file_id: int) -> HttpResponse:
    assessment = get_object_or_404(_assessments(request.user), pk=pk)
    evidence = get_object_or_404(EvidenceFile, pk=file_id, answer__assessment=assessment)
    name, question_id = evidence.original_name, evidence.answer.question_id
    try:
        evidence_remove(evidence=evidence, user=request.user)
    except AssessmentError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"{question_id}: file {name!r} removed.")
    return redirect(f"{reverse('assessment-detail', args=[pk])}#q-{question_id}")


def evidence_download(request: HttpRequest, pk: int, file_id: int) -> FileResponse:
    """Served only through here, to users who may see the provider, as a download."""
    assessment = get_object_or_404(_assessments(request.user), pk=pk)
    evidence = get_object_or_404(EvidenceFile, pk=file_id, answer__assessment=assessment)
    response = FileResponse(
        evidence.file.open("rb"),
        as_attachment=True,
        filename=evidence.original_name,
        content_type=evidence.content_type,
    )
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "default-src 'none'; sandbox"
    return response
