"""Filters shared by the inventory pages and API (STYLE rule 8)."""

from __future__ import annotations

import django_filters
from django import forms
from django.db.models import Q
from django.forms import NullBooleanSelect

from gpuposture.base.filters import cluster_filter, tenant_filter
from inventory.models import Bulletin, DriftEvent, Node, PatchSla, Pod, SyncRun
from inventory.pod_party import pods_of_party


class NodeKindSelect(NullBooleanSelect):
    """Not Django's "Unknown / Yes / No": each choice says what it shows."""

    def __init__(self, attrs: dict | None = None) -> None:
        super().__init__(attrs)
        self.choices = [
            ("unknown", "all nodes"),
            ("true", "GPU nodes"),
            ("false", "CPU-only nodes"),
        ]


class NodeFilter(django_filters.FilterSet):
    cluster = cluster_filter()
    gpu_model = django_filters.CharFilter(
        field_name="gpu_model", lookup_expr="icontains", label="GPU model contains"
    )
    sharing_strategy = django_filters.ChoiceFilter(choices=Node.SharingStrategy.choices)
    patch_status = django_filters.ChoiceFilter(choices=Node.PatchStatus.choices)
    gpu = django_filters.BooleanFilter(
        field_name="is_gpu_node",
        label="Node kind",
        widget=NodeKindSelect(),
    )

    class Meta:
        model = Node
        fields = ["cluster", "gpu_model", "sharing_strategy", "patch_status", "gpu"]


class SyncRunFilter(django_filters.FilterSet):
    cluster = cluster_filter()
    status = django_filters.ChoiceFilter(choices=SyncRun.Status.choices)

    class Meta:
        model = SyncRun
        fields = ["cluster", "status"]


class PodFilter(django_filters.FilterSet):
    cluster = cluster_filter()
    tenant = tenant_filter()
    node = django_filters.CharFilter(field_name="node__name", label="Node name")
    party = django_filters.CharFilter(
        method="filter_party",
        label='Party: a tenant slug, "platform" or "unclassified" (a namespace no tenant and '
        "not the platform claims)",
    )

    class Meta:
        model = Pod
        fields = ["cluster", "tenant", "party", "node", "namespace", "phase"]

    def filter_party(self, queryset, name: str, value: str):
        return pods_of_party(queryset, value.strip()) if value.strip() else queryset


class DriftEventFilter(django_filters.FilterSet):
    cluster = cluster_filter()
    check = django_filters.CharFilter(field_name="check_id", lookup_expr="iexact")

    class Meta:
        model = DriftEvent
        fields = ["cluster", "check", "kind"]


COMPONENT_CHOICES = [
    ("driver", "GPU driver"),
    ("container_toolkit", "Container Toolkit"),
    ("gpu_operator", "GPU Operator"),
    ("device_plugin", "device plugin"),
    ("dra_driver", "DRA driver"),
    ("mig_manager", "MIG manager"),
    ("dcgm_exporter", "DCGM exporter"),
    ("vgpu", "vGPU"),
]


class BulletinFilter(django_filters.FilterSet):
    q = django_filters.CharFilter(method="search", label="Id or title contains", max_length=100)
    cve = django_filters.CharFilter(method="by_cve", label="CVE", max_length=40)
    component = django_filters.ChoiceFilter(
        field_name="fixes__kind", choices=COMPONENT_CHOICES, distinct=True, label="Component"
    )
    # Free text for the API (CSAF writes "Critical", "HIGH", ...); a list of choices on the page.
    severity = django_filters.CharFilter(
        field_name="aggregate_severity",
        lookup_expr="iexact",
        max_length=20,
        label="Severity",
        widget=forms.Select(choices=[("", "any")] + [(s, s) for s in PatchSla.Severity.values]),
    )
    tracking_id = django_filters.CharFilter(lookup_expr="icontains", max_length=200)

    class Meta:
        model = Bulletin
        fields = ["q", "cve", "component", "severity", "tracking_id", "category"]

    def search(self, queryset, name, value):
        return queryset.filter(Q(tracking_id__icontains=value) | Q(title__icontains=value))

    def by_cve(self, queryset, name, value):
        # CVE ids live in a JSON list; a text match works alike on SQLite and PostgreSQL.
        return queryset.filter(cves__icontains=value.strip().upper())
