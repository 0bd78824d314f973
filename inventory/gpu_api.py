"""`/api/v1/gpus/` (DESIGN §8): the physical GPUs of the GPU nodes, one row each.

There is no GPU table: a node's physical GPUs are its `gpu_count` (GFD's `nvidia.com/gpu.count`,
not the capacity time-slicing multiplies), with the UUIDs `nvidia-smi -q -x` gave for that node
where it was imported, else those the NVIDIA DRA driver's ResourceSlices publish for it (each at
the `index` it publishes: uuids_by_index). A GPU node whose count is unknown lists no GPUs: its
node row says `gpu_count: null`, and nothing here is guessed."""

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
        count = node.gpu_count or 0
        if host_uuids := host.get("gpu_uuids"):
            # nvidia-smi's UUIDs name the GPUs only when it saw as many as the node counts.
            uuids = dict(enumerate(host_uuids)) if len(host_uuids) == count else {}
        else:
            uuids = uuids_by_index(published.get((node.cluster_id, node.name), {}), count)
        own = (node.data or {}).get("gpu_sharing") or {}
        for index in range(count):
            # A GPU whose sharing DRA sets apart from the node's weakest: its own, and no
            # device-plugin replica count (DRA time-slicing has none).
            mode = own.get(str(index))
            rows.append(
                {
                    "id": f"{node.cluster.name}/{node.name}/{index}",
                    "cluster": node.cluster.name,
                    "node": node.name,
                    "index": index,
                    "uuid": uuids.get(index),
                    "gpu_model": node.gpu_model or None,
                    "sharing_strategy": mode or node.sharing_strategy,
                    "time_slicing_replicas": None if mode else node.time_slicing_replicas,
                    "mig_enabled": _mig_enabled(node, host),
                    "patch_status": node.patch_status,
                }
            )
    return rows


def _slice_uuids(nodes: list[Node]) -> dict[tuple[int, str], dict[str, set[int | None]]]:
    """(cluster id, node) -> the UUID of each GPU NVIDIA's ResourceSlices publish for the node,
    with the `index` each device of it publishes (a MIG device names its GPU by parentUUID,
    parentIndex; None: a device naming no index), one query."""
    found: dict[tuple[int, str], dict[str, set[int | None]]] = {}
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
                gpus.setdefault(uuid, set()).add(index)
    return found


def uuids_by_index(published: dict[str, set[int | None]], count: int) -> dict[int, str]:
    """GPU index -> UUID, each where the slices publish it for certain (`published`: UUID ->
    the indexes its devices publish, None for none). A GPU is the row of the index it
    publishes, whatever the others do: a device without one must not shift the rest (they had
    been sorted into rows, so one missing index moved every UUID). An index two UUIDs publish,
    or a UUID published under two indexes, is not certain: left out. A UUID published with no
    index takes the one index in 0..count-1 that no UUID publishes, where it is the only such
    UUID (so no other GPU can be that one); else it is left out."""
    by_index: dict[int, set[str]] = {}
    unindexed: list[str] = []
    for uuid, indexes in sorted(published.items()):
        known = {i for i in indexes if i is not None}
        if not known:
            unindexed.append(uuid)
        for index in known:
            # Under two indexes, this UUID's own is not known: each of them stays unsure.
            by_index.setdefault(index, set()).add(uuid if len(known) == 1 else "")
    found = {
        index: next(iter(uuids))
        for index, uuids in by_index.items()
        if 0 <= index < count and len(uuids) == 1 and "" not in uuids
    }
    free = [index for index in range(count) if index not in by_index]
    if len(unindexed) == 1 and len(free) == 1:
        found[free[0]] = unindexed[0]
    return found


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
