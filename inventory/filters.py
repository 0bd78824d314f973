"""Filters shared by the inventory pages and API (STYLE rule 8)."""

from __future__ import annotations

from typing import Any

import django_filters
from django import forms
from django.db.models import Q, QuerySet

from gpuposture.base.filters import FilterSet, KnownValueFilter, NamedFilter
from inventory.drift import DRIFT_CHECK_IDS
from inventory.models import Bulletin, Cluster, DriftEvent, Node, PatchSla, Pod, SyncRun
from inventory.platform import PLATFORM, UNCLASSIFIED_PARTY
from inventory.pod_party import pods_of_party
from tenants.filters import tenant_filter
from tenants.models import Tenant

# Kubernetes' PodPhase, a closed set (core/v1 PodStatus.phase).
POD_PHASES = ["Pending", "Running", "Succeeded", "Failed", "Unknown"]


def cluster_filter(**kwargs: Any) -> NamedFilter:
    kwargs.setdefault("label", "Cluster (name or id)")
    return NamedFilter(
        path="cluster",
        model=Cluster,
        names=("name",),
        noun="cluster",
        listing="GET /api/v1/clusters/",
        **kwargs,
    )


def node_filter(path: str = "node", **kwargs: Any) -> NamedFilter:
    kwargs.setdefault("label", "Node name")
    return NamedFilter(
        path=path, model=Node, names=("name",), noun="node", listing="GET /api/v1/nodes/", **kwargs
    )


def parties(user: Any) -> list[str]:
    """What `?party=` accepts: the two parties of unclaimed namespaces, then the slugs of
    the tenants `user` may see (None: the CLI, every tenant)."""
    tenants = Tenant.objects.all() if user is None else Tenant.objects.visible_to(user)
    slugs = set(tenants.values_list("slug", flat=True)) - {PLATFORM, UNCLASSIFIED_PARTY}
    return [PLATFORM, UNCLASSIFIED_PARTY, *sorted(slugs)]


# `?gpu=`: the node kinds, a closed set ("unknown": every node, the page's default). "true" is
# a node of GPUs of any vendor the checks judge (NVIDIA, AMD, Intel, Gaudi: is_accelerator_node),
# as a platform engineer counts GPU nodes; "nvidia" those whose stack gpuposture inventories;
# "false" the rest (an AWS Neuron or TPU node is among them, its accelerators listed).
NODE_KINDS = [
    ("unknown", "all nodes"),
    ("true", "GPU nodes (any vendor)"),
    ("nvidia", "NVIDIA GPU nodes"),
    ("false", "nodes without a GPU"),
]
KIND_FILTERS = {
    "true": {"is_accelerator_node": True},
    "nvidia": {"is_gpu_node": True},
    "false": {"is_accelerator_node": False},
}
BOOLEAN_WORDS = {
    "true": "true",
    "1": "true",
    "yes": "true",
    "false": "false",
    "0": "false",
    "no": "false",
    "unknown": "unknown",
    "nvidia": "nvidia",
}


# `?sharing_strategy=`: the stored modes, and "not_read" for the nodes whose sharing the rows
# show as null (Node.other_vendor_only: only other vendors' GPUs, whose sharing is not read).
# Any stored mode leaves those out: their stored "none" is NVIDIA's default, not a fact of
# their GPUs (inventory.serializers blanks it), so "none" must not list them as unshared.
NOT_READ = "not_read"
SHARING_CHOICES = [*Node.SharingStrategy.choices, (NOT_READ, "not read (other vendors' GPUs)")]
# A DRA-only node lists them in dra_accelerators (its capacity has none), read alike.
OTHER_VENDOR_ONLY = Q(is_gpu_node=False) & (
    (Q(data__accelerator_resources__isnull=False) & ~Q(data__accelerator_resources={}))
    | (Q(data__dra_accelerators__isnull=False) & ~Q(data__dra_accelerators={}))
)


class NodeKindSelect(forms.Select):
    """No kind asked for shows as "all nodes", the choice it means."""

    def format_value(self, value: Any) -> list[str]:
        return super().format_value(value or "unknown")


class NodeFilter(FilterSet):
    cluster = cluster_filter()
    gpu_model = django_filters.CharFilter(
        field_name="gpu_model", lookup_expr="icontains", label="GPU model contains"
    )
    sharing_strategy = django_filters.ChoiceFilter(
        choices=SHARING_CHOICES, method="filter_sharing", label="Sharing strategy"
    )
    patch_status = django_filters.ChoiceFilter(choices=Node.PatchStatus.choices)
    described_by = django_filters.ChoiceFilter(choices=Node.DescribedBy.choices)
    gpu = django_filters.ChoiceFilter(
        choices=NODE_KINDS,
        empty_label=None,
        method="filter_kind",
        label="Node kind",
        widget=NodeKindSelect,
    )

    class Meta:
        model = Node
        fields = ["cluster", "gpu_model", "sharing_strategy", "patch_status", "described_by", "gpu"]

    def __init__(self, data=None, *args, **kwargs) -> None:
        # A boolean as clients write it (True, 1, yes) means what "true" means.
        if data is not None and data.get("gpu"):
            data = data.copy()
            data["gpu"] = BOOLEAN_WORDS.get(data["gpu"].strip().lower(), data["gpu"])
        super().__init__(data, *args, **kwargs)

    def filter_kind(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        if value in KIND_FILTERS:
            return queryset.filter(**KIND_FILTERS[value])
        return queryset

    def filter_sharing(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        if value == NOT_READ:
            return queryset.filter(OTHER_VENDOR_ONLY)
        return queryset.filter(sharing_strategy=value).exclude(OTHER_VENDOR_ONLY)


class SyncRunFilter(FilterSet):
    cluster = cluster_filter()
    status = django_filters.ChoiceFilter(choices=SyncRun.Status.choices)

    class Meta:
        model = SyncRun
        fields = ["cluster", "status"]


class PodFilter(FilterSet):
    cluster = cluster_filter()
    tenant = tenant_filter()
    node = node_filter()
    party = KnownValueFilter(
        known=parties,
        noun="party",
        accepts='a tenant\'s slug, "platform" or "unclassified"',
        listing="GET /api/v1/tenants/",
        scoped=True,
        method="filter_party",
        label="Party: a tenant slug, \"platform\" (a platform namespace's pods and KAI's "
        'reservation pods) or "unclassified" (a namespace no tenant and not the platform claims)',
    )
    # Free text: a namespace is no object of ours, and one with no workloads lists none.
    namespace = django_filters.CharFilter(field_name="namespace", label="Namespace")
    phase = django_filters.ChoiceFilter(choices=[(p, p) for p in POD_PHASES], label="Phase")

    class Meta:
        model = Pod
        fields = ["cluster", "tenant", "party", "node", "namespace", "phase"]

    def filter_party(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        return pods_of_party(queryset, value)


class DriftEventFilter(FilterSet):
    cluster = cluster_filter()
    check = KnownValueFilter(
        known=lambda user: DRIFT_CHECK_IDS,
        noun="drift check",
        accepts="the id of a check drift events carry",
        normalise=lambda value: value.strip().upper(),
        field_name="check_id",
        label="Check id",
    )

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


class BulletinFilter(FilterSet):
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
