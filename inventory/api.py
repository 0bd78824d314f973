"""REST API for clusters, sync runs, nodes and pods."""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response

from gpuposture.base.api import ScopedReadOnlyViewSet, ScopedViewSetMixin
from gpuposture.base.queue import QueueUnavailable
from gpuposture.base.roles import PLATFORM_ENGINEER, SECURITY_LEAD, has_role
from inventory.api_revisions import held_answer
from inventory.bulletin_decisions import bulletin_delete
from inventory.bulletin_imports import bulletin_urls_import_request, bulletins_import_recorded
from inventory.components import firmware_coverage, node_components
from inventory.coverage import cluster_coverage_counts, with_coverage
from inventory.dra_node import node_dra_devices
from inventory.filters import (
    BulletinFilter,
    DriftEventFilter,
    NodeFilter,
    PodFilter,
    SyncRunFilter,
)
from inventory.models import (
    Bulletin,
    BulletinFix,
    BulletinImport,
    Cluster,
    DriftEvent,
    Node,
    Pod,
    SyncRun,
)
from inventory.presenter import PresentedSerializer, scope_in
from inventory.services import SyncBusy, cluster_save, cluster_sync_request
from inventory.validation import clean_cluster_source
from providers.models import Provider

MAX_IMPORT_URLS = 20
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
            "detected_at",
        ]


# CharFields stored blank for "not known" (or not installed): null in the API.
NULL_WHEN_BLANK = (
    "gpu_model",
    "driver_version",
    "container_toolkit_version",
    "device_plugin_version",
    "gpu_operator_version",
    "firmware_version",
    "mig_strategy",
    "mig_config",
)


class NodeSerializer(PresentedSerializer):
    """A node as DESIGN §8 lists it. An unknown value is null, never ""; a component the node
    does not run is null too, and `components` says "not_installed" for it (with the reason)."""

    cluster = serializers.SlugRelatedField(slug_field="name", read_only=True)
    components = serializers.SerializerMethodField()

    class Meta:
        model = Node
        fields = [
            "id",
            "name",
            "cluster",
            "is_gpu_node",
            "gpu_model",
            "gpu_count",
            "driver_version",
            "container_toolkit_version",
            "device_plugin_version",
            "gpu_operator_version",
            "firmware_version",
            "components",
            "sharing_strategy",
            "time_slicing_replicas",
            "mig_strategy",
            "mig_config",
            "taints",
            "labels",
            "patch_status",
            "patch_exposures",
            "patch_not_affected",
            "patch_notes",
            "first_seen",
            "changed_at",
        ]
        # Nullable in the schema too: clients must not be told these are always strings.
        extra_kwargs = {name: {"allow_null": True} for name in NULL_WHEN_BLANK}

    def to_representation(self, instance: Node) -> dict:  # type: ignore[override]  # its Meta.model is Node
        data = super().to_representation(instance)
        for name in NULL_WHEN_BLANK:
            data[name] = data[name] or None
        view = self.context.get("view")
        if getattr(view, "action", None) == "retrieve":
            # One node: the DRA devices its claims hold and by whom (three queries; lists
            # leave it out to keep their query count flat).
            data["dra_devices"] = node_dra_devices(instance, scope_in(self.context))
        return data

    @extend_schema_field(serializers.DictField(child=serializers.DictField()))
    def get_components(self, node: Node) -> dict:
        """component -> {"state": installed | unknown | not_installed, "version", "source"}."""
        return node_components(node.data) if node.is_gpu_node else {}


class PodSerializer(serializers.ModelSerializer):
    cluster = serializers.SlugRelatedField(slug_field="name", read_only=True)
    node = serializers.SlugRelatedField(slug_field="name", read_only=True, allow_null=True)
    tenant = serializers.SlugRelatedField(slug_field="slug", read_only=True, allow_null=True)

    class Meta:
        model = Pod
        fields = [
            "id",
            "cluster",
            "namespace",
            "name",
            "node",
            "tenant",
            "phase",
            "service_account",
            "gpu_resources",
            "first_seen",
            "changed_at",
        ]


class ClusterViewSet(
    ScopedViewSetMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    viewsets.ReadOnlyModelViewSet,
):
    """Clusters; platform engineers register and edit them and start syncs."""

    queryset = with_coverage(Cluster.objects.select_related("provider"))
    serializer_class = ClusterSerializer
    lookup_field = "name"
    write_roles = (PLATFORM_ENGINEER,)

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
        `status` succeeded or failed and `error` why."""
        cluster = self.get_object()
        try:
            run = cluster_sync_request(cluster=cluster, trigger="api")
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


class BulletinFixSerializer(serializers.ModelSerializer):
    class Meta:
        model = BulletinFix
        fields = [
            "kind",
            "platform",
            "branch",
            "line",
            "host",
            "affected_op",
            "affected_version",
            "condition",
            "fixed_version",
            "cves",
            "max_cvss",
            "severity",
            "warning",
        ]


class BulletinSerializer(serializers.ModelSerializer):
    fixes = BulletinFixSerializer(many=True, read_only=True)

    class Meta:
        model = Bulletin
        fields = [
            "id",
            "tracking_id",
            "title",
            "category",
            "version",
            "initial_release_date",
            "current_release_date",
            "aggregate_severity",
            "cves",
            "fixes",
            "unmatched",
            "source",
            "imported_at",
        ]


class BulletinImportSerializer(serializers.ModelSerializer):
    class Meta:
        model = BulletinImport
        fields = [
            "id",
            "action",
            "trigger",
            "requested_by",
            "sources",
            "status",
            "counts",
            "bulletins",
            "changes",
            "refused",
            "resolved_findings",
            "error",
            "started_at",
            "finished_at",
        ]


class BulletinViewSet(
    ScopedViewSetMixin,
    mixins.CreateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.ReadOnlyModelViewSet,
):
    """Vendor bulletins (CSAF 2.0). POST a CSAF JSON document to import it; a newer revision
    replaces an older one, an invalid document is refused with the reason. A newer revision
    that weakens a fix (a lower fixed version; a product, branch or CVE dropped) is held (202)
    until a security lead confirms it at /api/v1/bulletin-revisions/{id}/confirm/. DELETE
    (security lead) removes a bulletin. Each is recorded at /api/v1/bulletin-imports/."""

    queryset = Bulletin.objects.prefetch_related("fixes")
    serializer_class = BulletinSerializer
    write_roles = (SECURITY_LEAD, PLATFORM_ENGINEER)
    filterset_class = BulletinFilter

    @extend_schema(request=dict, responses={201: BulletinSerializer, 202: dict, 400: dict})
    def create(self, request: Request, *args, **kwargs) -> Response:
        if isinstance(request.data, dict) and "urls" in request.data:
            return self._import_urls(request.data["urls"])
        record, result = bulletins_import_recorded(
            trigger="api", actor=request.user, documents=[("api upload", request.data)]
        )
        if not result.landed:
            return Response(
                {"detail": f"not a valid CSAF 2.0 document: {result.refused[0][1]}"},
                status=status.HTTP_400_BAD_REQUEST,
            )
        if result.held:
            return Response(held_answer(record), status=status.HTTP_202_ACCEPTED)
        [tracking_id] = [*result.imported, *result.replaced, *result.unchanged]
        bulletin = self.get_queryset().get(tracking_id=tracking_id)
        code = status.HTTP_200_OK if result.unchanged else status.HTTP_201_CREATED
        return Response(BulletinSerializer(bulletin).data, status=code)

    @extend_schema(responses={200: BulletinImportSerializer, 403: dict})
    def destroy(self, request: Request, *args, **kwargs) -> Response:
        if not has_role(request.user, SECURITY_LEAD):
            raise PermissionDenied("Only a security lead may delete a bulletin.")
        record = bulletin_delete(bulletin=self.get_object(), user=request.user, trigger="api")
        return Response(BulletinImportSerializer(record).data)

    def _import_urls(self, urls: object) -> Response:
        """`{"urls": [...]}`: documents or provider feeds, fetched by a worker through the
        SSRF guard; answers 202 with the import to follow at /api/v1/bulletin-imports/{id}/."""
        if not (
            isinstance(urls, list)
            and 0 < len(urls) <= MAX_IMPORT_URLS
            and all(isinstance(u, str) and 0 < len(u) <= 2000 for u in urls)
        ):
            return Response(
                {"detail": f"urls must be a list of 1 to {MAX_IMPORT_URLS} URL strings"},
                status=status.HTTP_400_BAD_REQUEST,
            )
        try:
            record = bulletin_urls_import_request(urls=urls, trigger="api", actor=self.request.user)
        except QueueUnavailable as exc:
            body = {"detail": str(exc), "import": BulletinImportSerializer(exc.record).data}
            return Response(body, status=status.HTTP_503_SERVICE_UNAVAILABLE, headers=RETRY_LATER)
        record.refresh_from_db()  # eager mode (no broker) has already run it
        return Response(BulletinImportSerializer(record).data, status=status.HTTP_202_ACCEPTED)


class BulletinImportViewSet(ScopedReadOnlyViewSet):
    """Bulletin imports (CLI, API, upload form, feed schedule): what was asked, what landed,
    what was refused and why."""

    queryset = BulletinImport.objects.all()
    serializer_class = BulletinImportSerializer
    filterset_fields = {"status": ["exact"], "trigger": ["exact"]}
