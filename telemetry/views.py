"""Utilisation pages: GPU-hours per tenant, top and idle GPUs, chargeback; GPU resets."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from gpuposture.base.decorators import role_required
from gpuposture.base.roles import RECORD_RESETS, may
from gpuposture.base.spreadsheet import safe_csv
from inventory.models import Cluster
from inventory.presenter import hidden_scope_for, present_all
from telemetry.charts import tenant_hours_area
from telemetry.forms import ResetAttestationForm
from telemetry.models import ResetAttestation
from telemetry.selectors import (
    Period,
    chargeback,
    idle_allocated,
    tenant_days,
    top_gpus,
    under_way,
)
from telemetry.services import reset_attestation_record

CHARGEBACK_COLUMNS = ("tenant", "gpu_hours", "mig_slice_hours", "busy_gpu_hours", "confidence")
PERIODS = (7, 30, 90)


def _period(request: HttpRequest) -> Period:
    try:
        days = int(request.GET.get("days", 30))
    except ValueError:
        days = 30
    cluster = (request.GET.get("cluster") or "")[:63] or None
    return Period(days=days if days in PERIODS else 30, cluster=cluster)


def utilisation(request: HttpRequest) -> HttpResponse:
    period = _period(request)
    days = tenant_days(request.user, period)
    context = {
        "period": period,
        "periods": PERIODS,
        "clusters": Cluster.objects.visible_to(request.user).values_list("name", flat=True),
        "chart": tenant_hours_area(days) if days else None,
        # The day under way has figures: say they are partial (the template has no logic).
        "partial_from": under_way() if any(r["partial"] for r in days) else None,
        "chargeback": chargeback(days),
        "top": top_gpus(request.user, period),
        "idle": idle_allocated(request.user, period),
        "resets": present_all(
            hidden_scope_for(request.user),
            ResetAttestation.objects.visible_to(request.user).select_related(
                "cluster", "previous_tenant", "next_tenant"
            )[:20],
        ),
        "can_record_reset": may(request.user, RECORD_RESETS),
    }
    return render(request, "telemetry/utilisation.html", context)


def chargeback_csv(request: HttpRequest) -> HttpResponse:
    period = _period(request)
    rows = chargeback(tenant_days(request.user, period))
    body = safe_csv(
        CHARGEBACK_COLUMNS,
        (
            [r["tenant"], *(_hours(r[c]) for c in CHARGEBACK_COLUMNS[1:4]), r["confidence"]]
            for r in rows
        ),
    )
    response = HttpResponse(body, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="chargeback-{period.days}d.csv"'
    return response


def _hours(value: float | None) -> float | str:
    # None: busy time of MIG instances, which DCGM-Exporter does not measure (an empty cell).
    return "" if value is None else round(value, 3)


@role_required(*RECORD_RESETS)
def reset_attestation_create(request: HttpRequest) -> HttpResponse:
    form = ResetAttestationForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        reset_attestation_record(
            attestation=form.save(commit=False), actor=request.user.get_username()
        )
        messages.success(request, "GPU reset recorded.")
        return redirect("utilisation")
    return render(request, "telemetry/reset_form.html", {"form": form})
