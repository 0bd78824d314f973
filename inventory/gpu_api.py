"""`/api/v1/gpus/` (DESIGN §8): the physical GPUs of the GPU nodes, one row each.

There is no GPU table: a node's physical GPUs are its `gpu_count` (GFD's `nvidia.com/gpu.count`,
not the capacity time-slicing multiplies), with the UUIDs `nvidia-smi -q -x` gave for that node
where it was imported, else those the NVIDIA DRA driver's ResourceSlices publish for it (in the
order of their `index`). A GPU node whose count is unknown lists no GPUs: its node row says
`gpu_count: null`, and nothing here is guessed."""

from __future__ import annotations

import django_filters
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from gpuposture.base.filters import FilterSet
from inventory import snapshot as snap
from inventory.dra_devices import NVIDIA_DRIVER, device_kind
from inventory.filters import cluster_filter, node_filter
from inventory.models import ClusterObject, Node, NodeHostFacts
from inventory.sources.raw import as_int


class GpuFilter(FilterSet):
    cluster = cluster_filter()
    node = node_filter(path="")
    gpu_model = django_filters.CharFilter(
        field_name="gpu_model", lookup_expr="icontains", label="GPU model contains"
    )
    # Each GPU's own sharing (gpu_rows), which may be stronger than its node's: checked here,
    # applied to the rows.
    sharing_strategy = django_filters.ChoiceFilter(
        choices=Node.SharingStrategy.choices, method="rows_only", label="GPU's sharing strategy"
    )

    def rows_only(self, queryset, name, value):
        return queryset

    class Meta:
        model = Node
        fields = ["cluster", "node", "gpu_model", "sharing_strategy"]


class GpuSerializer(serializers.Serializer):
    id = serializers.CharField(help_text="cluster/node/index: stable while the node keeps it.")
    cluster = serializers.CharField()
    node = serializers.CharField()
    index = serializers.IntegerField(help_text="The GPU's minor number on the node, from 0.")
    uuid = serializers.CharField(
        allow_null=True,
        help_text="From nvidia-smi where imported, else the node's DRA ResourceSlices; null: "
        "not known.",
    )
    gpu_model = serializers.CharField(allow_null=True)
    sharing_strategy = serializers.CharField()
    time_slicing_replicas = serializers.IntegerField(allow_null=True)
    mig_enabled = serializers.BooleanField(
        allow_null=True, help_text="From nvidia-smi or the node's MIG strategy; null: unknown."
    )
    patch_status = serializers.CharField()


def _mig_enabled(node: Node, facts: dict) -> bool | None:
    if isinstance(facts.get("mig_enabled"), bool):
        return facts["mig_enabled"]
    if node.sharing_strategy == Node.SharingStrategy.MIG:
        return True
    return None


def gpu_rows(nodes: list[Node]) -> list[dict]:
    """One row per physical GPU of each node (host facts read in one query)."""
    facts = {
        (f.cluster_id, f.node_name): f.facts
        for f in NodeHostFacts.objects.filter(
            cluster_id__in={n.cluster_id for n in nodes}, node_name__in={n.name for n in nodes}
        )
    }
    published = _slice_uuids(nodes)
    rows = []
    for node in nodes:
        host = facts.get((node.cluster_id, node.name)) or {}
        uuids = host.get("gpu_uuids") or published.get((node.cluster_id, node.name)) or []
        # nvidia-smi's UUIDs name the GPUs only when it saw as many as the node counts.
        uuids = uuids if len(uuids) == node.gpu_count else []
        own = (node.data or {}).get("gpu_sharing") or {}
        for index in range(node.gpu_count or 0):
            # A GPU whose sharing DRA sets apart from the node's weakest: its own, and no
            # device-plugin replica count (DRA time-slicing has none).
            mode = own.get(str(index))
            rows.append(
                {
                    "id": f"{node.cluster.name}/{node.name}/{index}",
                    "cluster": node.cluster.name,
                    "node": node.name,
                    "index": index,
                    "uuid": uuids[index] if uuids else None,
                    "gpu_model": node.gpu_model or None,
                    "sharing_strategy": mode or node.sharing_strategy,
                    "time_slicing_replicas": None if mode else node.time_slicing_replicas,
                    "mig_enabled": _mig_enabled(node, host),
                    "patch_status": node.patch_status,
                }
            )
    return rows


def _slice_uuids(nodes: list[Node]) -> dict[tuple[int, str], list[str]]:
    """(cluster id, node) -> the UUIDs of the GPUs NVIDIA's ResourceSlices publish for the
    node, by their `index` (a MIG device names its GPU by parentUUID, parentIndex), one query."""
    found: dict[tuple[int, str], dict[str, int]] = {}
    names = {n.name for n in nodes}
    rows = ClusterObject.objects.filter(
        cluster_id__in={n.cluster_id for n in nodes}, kind="dra_slice"
    ).values_list("cluster_id", "data")
    for cluster_id, data in rows:
        slice_ = snap.from_dict(snap.DraSlice, data)
        node = slice_.node_name
        if slice_.driver != NVIDIA_DRIVER or node is None or node not in names:
            continue
        gpus = found.setdefault((cluster_id, node), {})
        for device in slice_.devices:
            attrs = device.attributes
            kind = device_kind(slice_.driver, attrs, device.name)
            if kind == "gpu":
                uuid, index = attrs.get("uuid", ""), as_int(attrs.get("index"))
            elif kind == "mig":
                uuid, index = attrs.get("parentUUID", ""), as_int(attrs.get("parentIndex"))
            else:
                continue
            if uuid.startswith("GPU-"):
                # Unindexed devices after the indexed ones, by UUID.
                order = index if index is not None else 1 << 30
                gpus[uuid] = min(gpus.get(uuid, order), order)
    return {key: sorted(gpus, key=lambda u: (gpus[u], u)) for key, gpus in found.items()}


class GpuViewSet(viewsets.GenericViewSet):
    """The physical GPUs of the GPU nodes you may see, one row each (filters `cluster`,
    `node`, `gpu_model`, `sharing_strategy`)."""

    queryset = Node.objects.filter(is_gpu_node=True).select_related("cluster")
    serializer_class = GpuSerializer
    filterset_class = GpuFilter

    def get_queryset(self):
        return super().get_queryset().visible_to(self.request.user)

    @extend_schema(responses=GpuSerializer(many=True))
    def list(self, request: Request) -> Response:
        nodes = list(self.filter_queryset(self.get_queryset()))
        rows = gpu_rows(nodes)
        if wanted := self.request.query_params.get("sharing_strategy"):
            rows = [r for r in rows if r["sharing_strategy"] == wanted]
        page = self.paginate_queryset(rows)
        if page is not None:
            return self.get_paginated_response(GpuSerializer(page, many=True).data)
        return Response(GpuSerializer(rows, many=True).data)
