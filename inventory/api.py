"""REST API for clusters, sync runs, nodes and pods."""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from gpuposture.base.api import NameOrIdLookupMixin, ScopedReadOnlyViewSet, ScopedViewSetMixin
from gpuposture.base.queue import QueueUnavailable
from gpuposture.base.roles import EDIT_CLUSTERS
from inventory.components import firmware_coverage, node_components
from inventory.coverage import cluster_coverage_counts, with_coverage
from inventory.dra_node import node_dra_devices
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
from inventory.owners import WorkloadRef
from inventory.pod_party import pod_parties
from inventory.pod_workloads import pod_workloads
from inventory.presenter import PresentedSerializer, node_basis, scope_in
from inventory.services import SyncBusy, cluster_save, cluster_sync_request
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
    accelerator_resources = serializers.SerializerMethodField(
        help_text="Other vendors' accelerators the node's capacity lists, resource -> count "
        '(`{"amd.com/gpu": 8}`, `habana.ai/gaudi`, `gpu.intel.com/xe`, ...); {} for none. Their '
        "stack is not inventoried: gpu_model, gpu_count and the versions stay NVIDIA's (null)."
    )
    accelerator_vendors = serializers.ListField(
        child=serializers.CharField(),
        read_only=True,
        help_text='Whose those accelerators are ("AMD", "Intel", "Intel Gaudi", "AWS Neuron", '
        '"Google TPU"); [] for none.',
    )
    not_inventoried = serializers.CharField(
        read_only=True,
        allow_null=True,
        help_text="Why those accelerators have no model, physical count, versions, sharing "
        "strategy or patch judgement here (their vendor's stack is not read); null for a node "
        "with none.",
    )
    gpu_count_basis = serializers.SerializerMethodField(
        help_text="Where gpu_count comes from when no label gives it, on a GPU Operator sandbox "
        "node (whatever gave it) or from nvidia-smi, or why it is null on a vGPU host; null when "
        "none is recorded."
    )
    sharing_basis = serializers.SerializerMethodField(
        help_text="Why sharing_strategy is what GFD's labels and the device-plugin config do not "
        "say (a DRA claim, HAMi), or which device-plugin config is in force where the node's "
        "plugin ignores its nvidia.com/device-plugin.config label (or is not in the snapshot to "
        "show it reads it); null when they decide it."
    )

    class Meta:
        model = Node
        fields = [
            "id",
            "name",
            "cluster",
            "described_by",
            "is_gpu_node",
            "is_accelerator_node",
            "accelerator_resources",
            "accelerator_vendors",
            "not_inventoried",
            "gpu_model",
            "gpu_count",
            "gpu_count_basis",
            "driver_version",
            "container_toolkit_version",
            "device_plugin_version",
            "gpu_operator_version",
            "firmware_version",
            "components",
            "sharing_strategy",
            "sharing_basis",
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
        extra_kwargs = {
            name: {"allow_null": True}
            for name in (*NULL_WHEN_BLANK, "patch_status", "sharing_strategy")
        }

    def to_representation(self, instance: Node) -> dict:  # type: ignore[override]  # its Meta.model is Node
        data = super().to_representation(instance)
        for name in NULL_WHEN_BLANK:
            data[name] = data[name] or None
        # Stored "" on a node known to hold no GPU: null, "nothing to patch" (docs/api.md).
        data["patch_status"] = data["patch_status"] or None
        if instance.other_vendor_only:
            # Only other vendors' GPUs: "none (whole GPUs)" would be a guess; their sharing
            # is not read (sharing_basis says so).
            data["sharing_strategy"] = None
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

    @extend_schema_field(serializers.DictField(child=serializers.IntegerField()))
    def get_accelerator_resources(self, node: Node) -> dict[str, int]:
        """resource -> count of the other vendors' accelerators the node advertises."""
        return node.other_accelerators

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_gpu_count_basis(self, node: Node) -> str | None:
        """Where `gpu_count` comes from: on a GPU Operator sandbox node whatever gave it (GFD's
        or the cloud's label, a passthrough node's sandbox device-plugin capacity) or why it is
        null (a vGPU host's capacity counts vGPUs); an nvidia-smi import; null where a label
        gives it on any other node or none is known."""
        return node_basis(node.data, "gpu_count_basis", scope_in(self.context))

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_sharing_basis(self, node: Node) -> str | None:
        """Why `sharing_strategy` is what GFD's labels and the device-plugin config do not say
        (a DRA claim sharing a device, HAMi's shares), or which device-plugin config is in force
        where the node's plugin ignores its device-plugin.config label; null where they decide
        it; on a node of other vendors' GPUs alone, why it is not known."""
        if node.other_vendor_only:
            return node.not_inventoried
        return node_basis(node.data, "sharing_basis", scope_in(self.context))


class PodListSerializer(serializers.ListSerializer):
    """Reads the parties and workloads of a page's pods together (inventory.pod_party: one
    query per cluster of the page with a workload no tenant claims; inventory.pod_workloads:
    the page's owner links in one), not once per pod."""

    def to_representation(self, data):
        pods = list(data.all() if hasattr(data, "all") else data)
        self.child.parties = pod_parties(pods)
        self.child.workloads = pod_workloads(pods)
        return super().to_representation(pods)


class PodSerializer(serializers.ModelSerializer):
    cluster = serializers.SlugRelatedField(slug_field="name", read_only=True)
    node = serializers.SlugRelatedField(slug_field="name", read_only=True, allow_null=True)
    tenant = serializers.SlugRelatedField(
        slug_field="slug",
        read_only=True,
        allow_null=True,
        help_text="The tenant claiming the workload's namespace; null both for a platform "
        "namespace and for one no tenant claims (see party).",
    )
    party = serializers.SerializerMethodField(
        help_text='Who the workload belongs to: its tenant\'s slug, "platform" for a platform '
        'namespace, or "unclassified" for a namespace neither a tenant nor the platform '
        "claims (judged under the unclassified class, never as the platform). The same words "
        "as a node's dra_devices[].party.",
    )
    workload_kind = serializers.SerializerMethodField(
        help_text="The kind of the workload the pod belongs to, its owner chain resolved to the "
        "top controller as findings name their subject (subject_kind): Deployment, "
        "StatefulSet, DaemonSet, Job, CronJob, a custom resource such as InferenceService "
        "or RayJob, or Pod for a bare pod."
    )
    workload_namespace = serializers.SerializerMethodField(
        help_text="The workload's namespace (subject_namespace): the pod's, or \"\" for a "
        "cluster-scoped controller (the GPU Operator's ClusterPolicy)."
    )
    workload_name = serializers.SerializerMethodField(
        help_text="The workload's name (subject_name)."
    )
    parties: dict[int, str] | None = None
    workloads: dict[int, WorkloadRef] | None = None

    class Meta:
        model = Pod
        list_serializer_class = PodListSerializer
        fields = [
            "id",
            "cluster",
            "namespace",
            "name",
            "workload_kind",
            "workload_namespace",
            "workload_name",
            "node",
            "tenant",
            "party",
            "phase",
            "service_account",
            "gpu_resources",
            "first_seen",
            "changed_at",
        ]

    def get_party(self, pod: Pod) -> str:
        if self.parties is None or pod.pk not in self.parties:
            return pod_parties([pod])[pod.pk]  # one workload (retrieve)
        return self.parties[pod.pk]

    def _workload(self, pod: Pod) -> WorkloadRef:
        if self.workloads is None or pod.pk not in self.workloads:
            self.workloads = {**(self.workloads or {}), **pod_workloads([pod])}  # retrieve
        return self.workloads[pod.pk]

    def get_workload_kind(self, pod: Pod) -> str:
        return self._workload(pod).kind

    def get_workload_namespace(self, pod: Pod) -> str:
        return self._workload(pod).namespace

    def get_workload_name(self, pod: Pod) -> str:
        return self._workload(pod).name


class ClusterViewSet(
    NameOrIdLookupMixin,
    ScopedViewSetMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    viewsets.ReadOnlyModelViewSet,
):
    """Clusters; platform engineers register and edit them and start syncs."""

    queryset = with_coverage(Cluster.objects.select_related("provider"))
    serializer_class = ClusterSerializer
    lookup_field = "name"
    write_roles = EDIT_CLUSTERS

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
