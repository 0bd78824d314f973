"""REST API for clusters, sync runs, nodes and pods."""

from __future__ import annotations

from rest_framework import serializers

from gpuposture.base.api import ScopedReadOnlyViewSet
from inventory.filters import NodeFilter
from inventory.models import Cluster, Node, Pod, SyncRun


class SyncRunSerializer(serializers.ModelSerializer):
    cluster = serializers.SlugRelatedField(slug_field="name", read_only=True)
    duration_seconds = serializers.FloatField(read_only=True, allow_null=True)

    class Meta:
        model = SyncRun
        fields = [
            "id", "cluster", "source", "status", "started_at", "finished_at",
            "duration_seconds", "counts", "changes", "warnings", "error",
        ]  # fmt: skip


class ClusterSerializer(serializers.ModelSerializer):
    provider = serializers.SlugRelatedField(slug_field="slug", read_only=True)

    class Meta:
        model = Cluster
        fields = ["id", "name", "description", "provider", "source", "created_at"]


class NodeSerializer(serializers.ModelSerializer):
    cluster = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = Node
        fields = [
            "id", "name", "cluster", "is_gpu_node", "gpu_model", "gpu_count", "driver_version",
            "container_toolkit_version", "device_plugin_version", "gpu_operator_version",
            "firmware_version", "sharing_strategy", "time_slicing_replicas", "mig_strategy",
            "mig_config", "taints", "labels", "patch_status", "first_seen", "changed_at",
        ]  # fmt: skip


class PodSerializer(serializers.ModelSerializer):
    cluster = serializers.SlugRelatedField(slug_field="name", read_only=True)
    node = serializers.SlugRelatedField(slug_field="name", read_only=True)
    tenant = serializers.SlugRelatedField(slug_field="slug", read_only=True)

    class Meta:
        model = Pod
        fields = [
            "id", "cluster", "namespace", "name", "node", "tenant", "phase",
            "service_account", "gpu_resources", "first_seen", "changed_at",
        ]  # fmt: skip


class ClusterViewSet(ScopedReadOnlyViewSet):
    queryset = Cluster.objects.select_related("provider")
    serializer_class = ClusterSerializer
    lookup_field = "name"


class SyncRunViewSet(ScopedReadOnlyViewSet):
    queryset = SyncRun.objects.select_related("cluster")
    serializer_class = SyncRunSerializer
    filterset_fields = {"status": ["exact"], "cluster__name": ["exact"]}


class NodeViewSet(ScopedReadOnlyViewSet):
    queryset = Node.objects.select_related("cluster")
    serializer_class = NodeSerializer
    filterset_class = NodeFilter


class WorkloadViewSet(ScopedReadOnlyViewSet):
    queryset = Pod.objects.select_related("cluster", "node", "tenant")
    serializer_class = PodSerializer
    filterset_fields = {"namespace": ["exact"], "phase": ["exact"]}
