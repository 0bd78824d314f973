"""REST API for clusters, sync runs, nodes and pods."""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import models
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from gpuposture.base.api import NameOrIdLookupMixin, ScopedReadOnlyViewSet, ScopedViewSetMixin
from gpuposture.base.querysets import sees_every_row
from gpuposture.base.queue import QueueUnavailable
from gpuposture.base.roles import EDIT_CLUSTERS
from inventory.coverage import cluster_coverage_counts, with_coverage
from inventory.drift_read import hidden_changes, nodes_in_scope, shown_nodes
from inventory.filters import (
    DriftEventFilter,
    NodeFilter,
    PodFilter,
    SyncRunFilter,
)
from inventory.models import (
    Cluster,
    DriftEvent,
    Node,
    Pod,
    SyncRun,
)
from inventory.node_components import firmware_coverage
from inventory.presenter import PresentedSerializer, scope_in
from inventory.serializers import NodeSerializer, PodSerializer
from inventory.services import NoStoredSource, SyncBusy, cluster_save, cluster_sync_request
from inventory.validation import clean_cluster_source, reach_unchanged
from providers.models import Provider

# Answered with 503 when the task queue is down: a client may try again after this.
RETRY_LATER = {"Retry-After": "30"}


class SyncRunSerializer(PresentedSerializer):
    cluster = serializers.SlugRelatedField(slug_field="name", read_only=True)
    duration_seconds = serializers.FloatField(read_only=True, allow_null=True)

    class Meta:
        model = SyncRun
        fields = [
            "id",
            "cluster",
            "source",
            "mode",
            "trigger",
            "status",
            "started_at",
            "finished_at",
            "duration_seconds",
            "progress",
            "counts",
            "changes",
            "files_read",
            "kinds_unread",
            "warnings",
            "error",
        ]


class ClusterSerializer(serializers.ModelSerializer):
    """How to reach a cluster: a kubeconfig path (inside GPUPOSTURE_KUBECONFIG_DIR) and
    context, in-cluster access, or snapshot files. Never a token or key."""

    provider = serializers.SlugRelatedField(
        slug_field="slug", queryset=Provider.objects.all(), required=False, allow_null=True
    )
    snapshot_paths = serializers.ListField(
        child=serializers.CharField(max_length=500), required=False, max_length=20
    )

    inventory_coverage = serializers.SerializerMethodField()

    class Meta:
        model = Cluster
        fields = [
            "id",
            "name",
            "description",
            "provider",
            "source",
            "kubeconfig_path",
            "kube_context",
            "snapshot_paths",
            "sync_interval_minutes",
            "created_at",
            "inventory_coverage",
        ]
        extra_kwargs = {"sync_interval_minutes": {"max_value": 7 * 24 * 60}}

    @extend_schema_field(serializers.DictField())
    def get_inventory_coverage(self, cluster: Cluster) -> dict:
        """GPU nodes and how many have a known firmware (VBIOS) version: the API never shows
        it, so this is coverage, not a finding. Annotated by the list (no query per row)."""
        return firmware_coverage(*cluster_coverage_counts(cluster))

    def validate(self, attrs: dict) -> dict:
        merged = {
            field: attrs.get(field, getattr(self.instance, field, default))
            for field, default in (
                ("source", "snapshot"),
                ("kubeconfig_path", ""),
                ("kube_context", ""),
                ("snapshot_paths", []),
            )
        }
        if reach_unchanged(self.instance, merged):
            return attrs
        try:
            attrs.update(clean_cluster_source(**merged))
        except DjangoValidationError as exc:
            raise serializers.ValidationError(
                exc.message_dict if hasattr(exc, "error_dict") else exc.messages
            ) from exc
        return attrs

    def create(self, validated_data: dict) -> Cluster:
        return cluster_save(cluster=Cluster(**validated_data), actor=self._actor())

    def update(self, instance: Cluster, validated_data: dict) -> Cluster:
        for key, value in validated_data.items():
            setattr(instance, key, value)
        return cluster_save(cluster=instance, actor=self._actor())

    def _actor(self):
        request = self.context.get("request")
        return request.user if request is not None else None


class DriftEventSerializer(PresentedSerializer):
    cluster = serializers.SlugRelatedField(slug_field="name", read_only=True)
    hidden_changes = serializers.SerializerMethodField(
        help_text="How many of the paths that differ between before and after read the same "
        "to you: a value naming another tenant changed (0 for those who read every name)."
    )

    class Meta:
        model = DriftEvent
        fields = [
            "id",
            "cluster",
            "sync_run",
            "check_id",
            "kind",
            "subject_kind",
            "subject_namespace",
            "subject_name",
            "summary",
            "before",
            "after",
            "nodes",
            "hidden_changes",
            "detected_at",
        ]

    def get_hidden_changes(self, event: DriftEvent) -> int:
        scope = scope_in(self.context)
        in_cluster = scope.in_cluster(event.cluster_id) if scope is not None else None
        return hidden_changes(in_cluster, event.before, event.after)

    def to_representation(self, instance: models.Model) -> dict:
        """The event's nodes cut to those the reader may see (drift_read)."""
        assert isinstance(instance, DriftEvent)
        data = super().to_representation(instance)
        if "nodes_in_scope" not in self.context:
            request = self.context.get("request")
            self.context["nodes_in_scope"] = nodes_in_scope(request.user) if request else None
        visible = self.context["nodes_in_scope"]
        data["nodes"] = shown_nodes(data["nodes"], instance.cluster_id, visible)
        return data


# CharFields stored blank for "not known" (or not installed): null in the API.
class ClusterViewSet(
    NameOrIdLookupMixin,
    ScopedViewSetMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    viewsets.ReadOnlyModelViewSet,
):
    """Clusters; platform engineers register and edit them and start syncs."""

    queryset = Cluster.objects.select_related("provider")
    serializer_class = ClusterSerializer
    lookup_field = "name"
    write_roles = EDIT_CLUSTERS

    def get_queryset(self):
        """Each cluster with its coverage counted over the nodes the reader may see."""
        user = self.request.user
        visible = None if sees_every_row(user, Node) else Node.objects.visible_to(user)
        return with_coverage(super().get_queryset(), visible)

    @extend_schema(
        request=None,
        responses={
            200: SyncRunSerializer,
            202: SyncRunSerializer,
            409: SyncRunSerializer,
            503: SyncRunSerializer,
        },
    )
    @action(detail=True, methods=["post"])
    def sync(self, request: Request, name: str | None = None) -> Response:
        """Start a sync now; answers the new run: 202 while it is queued or running (follow it
        at /api/v1/sync-runs/{id}/), 200 once it has ended (in-process, without a broker), its
        `status` succeeded or failed and `error` why; 409 when a sync is already running or
        the cluster has no stored source to re-read (no run recorded)."""
        cluster = self.get_object()
        try:
            run = cluster_sync_request(cluster=cluster, trigger="api")
        except NoStoredSource as exc:  # nothing started, nothing recorded
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        except SyncBusy as exc:
            running = cluster.sync_runs.filter(status=SyncRun.Status.RUNNING).first()
            body: dict[str, object] = {"detail": str(exc)}
            if running:
                body["run"] = SyncRunSerializer(running).data
            return Response(body, status=status.HTTP_409_CONFLICT)
        except QueueUnavailable as exc:
            body = {"detail": str(exc), "run": SyncRunSerializer(exc.record).data}
            return Response(body, status=status.HTTP_503_SERVICE_UNAVAILABLE, headers=RETRY_LATER)
        run.refresh_from_db()
        ended = run.status != SyncRun.Status.RUNNING
        code = status.HTTP_200_OK if ended else status.HTTP_202_ACCEPTED
        return Response(SyncRunSerializer(run).data, status=code)


class DriftEventViewSet(ScopedReadOnlyViewSet):
    queryset = DriftEvent.objects.select_related("cluster")
    serializer_class = DriftEventSerializer
    filterset_class = DriftEventFilter


class SyncRunViewSet(ScopedReadOnlyViewSet):
    queryset = SyncRun.objects.select_related("cluster")
    serializer_class = SyncRunSerializer
    filterset_class = SyncRunFilter


class NodeViewSet(ScopedReadOnlyViewSet):
    queryset = Node.objects.select_related("cluster")
    serializer_class = NodeSerializer
    filterset_class = NodeFilter


class WorkloadViewSet(ScopedReadOnlyViewSet):
    queryset = Pod.objects.select_related("cluster", "node", "tenant")
    serializer_class = PodSerializer
    filterset_class = PodFilter
