"""Filters shared by the inventory pages and API (STYLE rule 8)."""

from __future__ import annotations

import django_filters

from inventory.models import DriftEvent, Node, Pod, SyncRun


class NodeFilter(django_filters.FilterSet):
    cluster = django_filters.CharFilter(field_name="cluster__name", label="Cluster name")
    gpu_model = django_filters.CharFilter(
        field_name="gpu_model", lookup_expr="icontains", label="GPU model contains"
    )
    sharing_strategy = django_filters.ChoiceFilter(choices=Node.SharingStrategy.choices)
    patch_status = django_filters.ChoiceFilter(choices=Node.PatchStatus.choices)
    gpu = django_filters.BooleanFilter(field_name="is_gpu_node", label="GPU nodes only")

    class Meta:
        model = Node
        fields = ["cluster", "gpu_model", "sharing_strategy", "patch_status", "gpu"]


class SyncRunFilter(django_filters.FilterSet):
    cluster = django_filters.CharFilter(field_name="cluster__name", label="Cluster name")
    status = django_filters.ChoiceFilter(choices=SyncRun.Status.choices)

    class Meta:
        model = SyncRun
        fields = ["cluster", "status"]


class PodFilter(django_filters.FilterSet):
    cluster = django_filters.CharFilter(field_name="cluster__name", label="Cluster name")
    tenant = django_filters.CharFilter(field_name="tenant__slug", label="Tenant slug")
    node = django_filters.CharFilter(field_name="node__name", label="Node name")

    class Meta:
        model = Pod
        fields = ["cluster", "tenant", "node", "namespace", "phase"]


class DriftEventFilter(django_filters.FilterSet):
    cluster = django_filters.CharFilter(field_name="cluster__name", label="Cluster name")
    check = django_filters.CharFilter(field_name="check_id", lookup_expr="iexact")

    class Meta:
        model = DriftEvent
        fields = ["cluster", "check", "kind"]
