"""The MIG partitioner: place MIG GPU instances on a GPU model's memory-slice grid (page and
`POST /api/v1/mig/validate/`), with the sharing warnings the tenants' trust classes raise."""

from __future__ import annotations

from django import forms
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from gpuposture.base.permissions import AnyRolePermission
from inventory.mig_layout import InstanceRequest, LayoutResult, to_mig_parted, validate_layout
from inventory.mig_profiles import MODELS
from tenants.models import Tenant

MAX_INSTANCES = 16


def tenant_modes() -> dict[str, tuple[str, ...]]:
    """tenant slug -> the sharing modes its trust class allows."""
    return {
        slug: tuple(modes or ())
        for slug, modes in Tenant.objects.values_list("slug", "trust_class__allowed_modes")
    }


def layout(gpu_model: str, instances: list[InstanceRequest]) -> LayoutResult:
    return validate_layout(gpu_model, instances, allowed_modes=tenant_modes())


# --- API ---------------------------------------------------------------------------------------


class InstanceSerializer(serializers.Serializer):
    profile = serializers.CharField(max_length=40)
    start = serializers.IntegerField(required=False, allow_null=True, min_value=0, max_value=7)
    tenant = serializers.SlugField(required=False, allow_null=True, max_length=40)


class LayoutRequestSerializer(serializers.Serializer):
    gpu_model = serializers.CharField(max_length=120)
    instances = InstanceSerializer(many=True, max_length=MAX_INSTANCES)


class MigValidateView(APIView):
    """Place MIG GPU instances on a GPU model following NVIDIA's placement rules; an unknown
    model or profile, or a layout that does not fit, is an error in the answer, not a 500."""

    permission_classes = [AnyRolePermission]

    @extend_schema(request=LayoutRequestSerializer, responses=dict)
    def post(self, request: Request) -> Response:
        body = LayoutRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        instances = [InstanceRequest(**i) for i in body.validated_data["instances"]]
        result = layout(body.validated_data["gpu_model"], instances)
        return Response(
            {
                "valid": result.valid,
                "model": result.model,
                "placements": [
                    {"profile": p.profile, "start": p.start, "size": p.size, "tenant": p.tenant}
                    for p in result.placements
                ],
                "errors": result.errors,
                "warnings": result.warnings,
                "compute_slices_used": result.compute_slices_used,
                "memory_slices_used": result.memory_slices_used,
            }
        )


# --- page --------------------------------------------------------------------------------------


class LayoutForm(forms.Form):
    gpu_model = forms.ChoiceField(choices=[(k, k) for k in MODELS], label="GPU model")
    instances = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 6}),
        max_length=2000,
        label="GPU instances, one per line: profile [@start] [tenant]",
        help_text="e.g. 3g.40gb @4 alpha",
    )

    def clean_instances(self) -> list[InstanceRequest]:
        requests = []
        for number, line in enumerate(self.cleaned_data["instances"].splitlines(), start=1):
            words = line.split()
            if not words:
                continue
            profile, start, tenant = words[0], None, None
            for word in words[1:]:
                if word.startswith("@") and word[1:].isdigit():
                    start = int(word[1:])
                else:
                    tenant = word[:40]
            if len(profile) > 40:
                raise forms.ValidationError(f"line {number}: not a MIG profile")
            requests.append(InstanceRequest(profile, start, tenant))
        if not requests or len(requests) > MAX_INSTANCES:
            raise forms.ValidationError(f"give 1 to {MAX_INSTANCES} instances")
        return requests


def mig_partitioner(request: HttpRequest) -> HttpResponse:
    form = LayoutForm(request.GET or None)
    result = snippet = None
    grid: list[dict] = []
    if form.is_valid():
        result = layout(form.cleaned_data["gpu_model"], form.cleaned_data["instances"])
        model = MODELS[form.cleaned_data["gpu_model"]]
        taken = {s: p for p in result.placements for s in range(p.start, p.start + p.size)}
        grid = [{"slot": s, "placement": taken.get(s)} for s in range(model.memory_slots)]
        if result.valid:
            snippet = to_mig_parted("custom-layout", result.placements)
    return render(
        request,
        "inventory/mig_partitioner.html",
        {"form": form, "result": result, "grid": grid, "snippet": snippet, "models": MODELS},
    )
