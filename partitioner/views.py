"""The MIG partitioner page (/mig/): place MIG GPU instances, split them into compute
instances, assign tenants, load a node's layout, export it for mig-parted.

Works as a plain GET form; static/js/mig.js turns it into an editor that asks
`POST /api/v1/mig/validate/` on every change. The API views live in partitioner.api.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import urlencode

from django import forms
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse

from gpuposture.base.roles import has_any_role
from inventory.mig_profiles import MODELS, ci_profile_name, ci_profiles
from partitioner.api import (
    MAX_COMPUTE_INSTANCES,
    MAX_INSTANCES,
    MigValidateView,
    layout_for,
    requests_json,
    result_json,
)
from partitioner.compute import ComputeRequest
from partitioner.config import export_name
from partitioner.layout import InstanceRequest, LayoutResult, Placement
from partitioner.selectors import NodeLookup, mig_node_layout, mig_nodes, mig_tenant_slugs

__all__ = ["MigValidateView", "mig_partitioner"]

TONES = 6  # tenant colours in app.css (.mig-t0 .. .mig-t5); the text always names the tenant


# --- the text form of a layout ---------------------------------------------------------------


def parse_instances(text: str) -> list[InstanceRequest]:
    """One GPU instance per line: `profile [@start] [tenant] [; ci-profile [tenant]]...`,
    e.g. `3g.40gb @4 alpha ; 1c alpha ; 2c beta`. ValueError names the bad line."""
    made = []
    for number, line in enumerate(text.splitlines(), start=1):
        gi, *cis = line.split(";")
        words = gi.split()
        if not words:
            continue
        profile, start, tenant = words[0], None, None
        for word in words[1:]:
            if word.startswith("@") and word[1:].isdigit():
                start = int(word[1:])
            else:
                tenant = word[:63]
        computes = []
        for ci in cis:
            ci_words = ci.split()
            if ci_words:
                ci_tenant = ci_words[1][:63] if len(ci_words) > 1 else None
                computes.append(ComputeRequest(ci_words[0][:40], ci_tenant))
        if len(profile) > 40 or len(computes) > MAX_COMPUTE_INSTANCES:
            raise ValueError(f"line {number}: not a MIG profile with its compute instances")
        made.append(InstanceRequest(profile, start, tenant, tuple(computes)))
    return made


def instances_text(instances: Sequence[InstanceRequest]) -> str:
    """The text parse_instances reads back."""
    lines = []
    for r in instances:
        words = [r.profile]
        if r.start is not None:
            words.append(f"@{r.start}")
        if r.tenant:
            words.append(r.tenant)
        parts = [" ".join(words)]
        parts += [" ".join(filter(None, (c.profile, c.tenant))) for c in r.compute_instances]
        lines.append(" ; ".join(parts))
    return "\n".join(lines)


class LayoutForm(forms.Form):
    gpu_model = forms.ChoiceField(choices=[(k, k) for k in MODELS], label="GPU model")
    instances = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 6}),
        max_length=4000,
        required=False,
        label="GPU instances, one per line: profile [@start] [tenant]",
        help_text="then optionally its compute instances, each after a semicolon: "
        "3g.40gb @4 alpha ; 1c alpha ; 2c beta",
    )
    config_name = forms.CharField(
        max_length=63, required=False, label="Config name for the mig-parted export"
    )

    def clean_instances(self) -> list[InstanceRequest]:
        try:
            made = parse_instances(self.cleaned_data["instances"])
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from exc
        if len(made) > MAX_INSTANCES:
            raise forms.ValidationError(f"give at most {MAX_INSTANCES} GPU instances")
        return made


# --- the grid ----------------------------------------------------------------------------------


def grid_cells(memory_slots: int, placements: Sequence[Placement]) -> list[dict[str, Any]]:
    """One cell per free memory slice, one cell spanning each GPU instance's slices."""
    tenants = sorted({p.tenant for p in placements if p.tenant})
    by_start = {p.start: p for p in placements}
    cells: list[dict[str, Any]] = []
    slot = 0
    while slot < memory_slots:
        p = by_start.get(slot)
        if p is None:
            cells.append({"slot": slot, "span": 1, "placement": None})
            slot += 1
            continue
        tone = str(tenants.index(p.tenant) % TONES) if p.tenant else "n"
        end = p.start + p.size - 1
        cells.append({"slot": slot, "span": p.size, "placement": p, "tone": tone, "end": end})
        slot += p.size
    return cells


# --- the page ----------------------------------------------------------------------------------


def _loaded(request: HttpRequest) -> NodeLookup | None:
    """The node named by ?cluster=&node= (or ?from=cluster/node), with its layout."""
    cluster, node = request.GET.get("cluster", ""), request.GET.get("node", "")
    if "/" in request.GET.get("from", ""):
        cluster, node = request.GET["from"].split("/", 1)
    if not (cluster and node):
        return None
    device = request.GET.get("device", "0")
    index = int(device) if device.isdigit() and int(device) < 16 else 0
    return mig_node_layout(user=request.user, cluster=cluster[:63], node=node[:253], device=index)


def _form_data(request: HttpRequest, loaded: NodeLookup | None) -> dict[str, Any] | None:
    if "gpu_model" in request.GET:
        return request.GET.dict()
    if loaded and loaded.layout and loaded.layout.model:
        return {
            "gpu_model": loaded.layout.model,
            "instances": instances_text(loaded.layout.instances),
            "config_name": loaded.layout.config_name,
        }
    return None


def _script_data(request: HttpRequest, form: LayoutForm) -> dict[str, Any]:
    """What static/js/mig.js needs, handed over with json_script (no inline script)."""
    models = {
        key: {
            "memory_slices": gpu.memory_slots,
            "compute_slices": gpu.compute_slices,
            "profiles": [
                {
                    "name": p.name,
                    "size": p.size,
                    "compute": p.compute,
                    "placements": list(p.placements),
                    "max_instances": p.max_instances,
                    "compute_instances": [
                        {"name": ci_profile_name(p, k), "short": f"{k}c", "slices": k, "max": n}
                        for k, n in sorted(ci_profiles(p).items())
                    ],
                }
                for p in gpu.profiles.values()
            ],
        }
        for key, gpu in MODELS.items()
    }
    valid = form.is_bound and form.is_valid()
    return {
        "models": models,
        "tenants": mig_tenant_slugs(user=request.user),
        "validate_url": reverse("api:api-mig-validate"),
        "initial": {
            "gpu_model": form.cleaned_data["gpu_model"] if valid else next(iter(MODELS)),
            "config_name": export_name(form.cleaned_data.get("config_name") if valid else ""),
            "instances": requests_json(form.cleaned_data["instances"]) if valid else [],
        },
    }


def _download(result: LayoutResult, name: str) -> HttpResponse:
    if not result.valid:
        text = "This layout does not fit, so there is nothing to export:\n" + "\n".join(
            result.errors
        )
        return HttpResponse(text, status=400, content_type="text/plain; charset=utf-8")
    answer = result_json(result, name)
    response = HttpResponse(answer["mig_parted"], content_type="application/yaml; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{answer["config_name"]}.yaml"'
    return response


def mig_partitioner(request: HttpRequest) -> HttpResponse:
    if not has_any_role(request.user):
        raise PermissionDenied("You need a gpuposture role to use the MIG partitioner.")
    loaded = _loaded(request)
    form = LayoutForm(_form_data(request, loaded))
    result = None
    cells: list[dict[str, Any]] = []
    if form.is_valid() and form.cleaned_data["instances"]:
        data = form.cleaned_data
        result = layout_for(request.user, data["gpu_model"], data["instances"])
        if request.GET.get("format") == "yaml":
            return _download(result, data["config_name"])
        cells = grid_cells(MODELS[data["gpu_model"]].memory_slots, result.placements)
    answer = result_json(result, form.cleaned_data.get("config_name")) if result else None
    export_query = ""
    if answer and answer["mig_parted"]:
        data = form.cleaned_data
        export_query = urlencode(
            {
                "gpu_model": data["gpu_model"],
                "instances": instances_text(data["instances"]),
                "config_name": answer["config_name"],
                "format": "yaml",
            }
        )
    return render(
        request,
        "partitioner/mig_partitioner.html",
        {
            "form": form,
            "result": result,
            "answer": answer,
            "cells": cells,
            "slots": range(MODELS[form.cleaned_data["gpu_model"]].memory_slots) if result else [],
            "export_query": export_query,
            "loaded": loaded,
            "nodes": mig_nodes(user=request.user),
            "mig_data": _script_data(request, form),
        },
    )
