"""The API's node and pod serializers (DESIGN §8 node fields; a pod with its workload and party)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from inventory.dra_node import node_dra_devices
from inventory.models import (
    Node,
    Pod,
)
from inventory.node_components import node_components
from inventory.owners import WorkloadRef
from inventory.pod_party import pod_parties
from inventory.pod_workloads import pod_workloads
from inventory.presenter import PresentedSerializer, node_basis, scope_in

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
        "node (whatever gave it) or from nvidia-smi, or why it is null on a vGPU host; under "
        "GFD's MIG single strategy (gpu.count counts MIG devices) how it was derived from the "
        "node's mig-parted config, or why it is null; null when none is recorded."
    )
    gpu_model_basis = serializers.SerializerMethodField(
        help_text="Where gpu_model comes from when no GFD label gives it and the NVIDIA DRA "
        "driver's ResourceSlices do (or why it is null: they name two models); null else."
    )
    driver_version_basis = serializers.SerializerMethodField(
        help_text="The ResourceSlice a driver version no GFD label gives comes from (or why it "
        "is null: the node's slices name two versions); null else."
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
            "gpu_model_basis",
            "gpu_count",
            "gpu_count_basis",
            "driver_version",
            "driver_version_basis",
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
        null (a vGPU host's capacity counts vGPUs); an nvidia-smi import; a MIG single-strategy
        node's derivation from its layout, or why it is null (mig_single); null where a label
        gives it on any other node or none is known."""
        return node_basis(node, "gpu_count_basis", scope_in(self.context))

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_gpu_model_basis(self, node: Node) -> str | None:
        """The ResourceSlice `gpu_model` comes from where no GFD label gives it (dra_stack)."""
        return node_basis(node, "gpu_model_basis", scope_in(self.context))

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_driver_version_basis(self, node: Node) -> str | None:
        """The ResourceSlice `driver_version` comes from where no GFD label gives it."""
        return node_basis(node, "driver_version_basis", scope_in(self.context))

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_sharing_basis(self, node: Node) -> str | None:
        """Why `sharing_strategy` is what GFD's labels and the device-plugin config do not say
        (a DRA claim sharing a device, HAMi's shares), or which device-plugin config is in force
        where the node's plugin ignores its device-plugin.config label; null where they decide
        it; on a node of other vendors' GPUs alone, why it is not known."""
        if node.other_vendor_only:
            return node.not_inventoried
        return node_basis(node, "sharing_basis", scope_in(self.context))


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
        "namespace or a KAI / Run:ai reservation pod (the scheduler's placeholder for the GPU "
        'its fractions share), or "unclassified" for a namespace neither a tenant nor the platform '
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
    extended_resource_claim = serializers.SerializerMethodField(
        help_text="Where DRA serves the pod's extended-resource requests (KEP-5004, Kubernetes "
        "1.34+: a DeviceClass's extendedResourceName, such as nvidia.com/gpu), the claim the "
        "scheduler made for them holds its GPUs, not a device plugin: `claim` "
        '("<namespace>/<name>") and `requests` ([{container, resource}]), which are then not '
        "in gpu_resources. null where its status names no such claim."
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
            "extended_resource_claim",
            "first_seen",
            "changed_at",
        ]
        extra_kwargs = {
            "gpu_resources": {
                "help_text": "resource -> count of every accelerator the pod holds through a "
                "device plugin, any vendor's (nvidia.com/gpu, amd.com/gpu, gpu.intel.com/i915, "
                "habana.ai/gaudi, ...), as the scheduler counts them; {} for none, for a pod "
                "bound to no node (it requests, it holds nothing yet), and for a finished pod "
                "(Succeeded, Failed: the kubelet released its devices)."
            }
        }

    @extend_schema_field(
        {
            "type": "object",
            "nullable": True,
            "properties": {
                "claim": {"type": "string"},
                "requests": {"type": "array", "items": {"type": "object"}},
            },
        }
    )
    def get_extended_resource_claim(self, pod: Pod) -> dict | None:
        # The stored pod (inventory.snapshot.Pod as codec.to_dict wrote it): its resource_claims
        # entry with no pod-side name is the KEP-5004 claim (inventory.sources.dra.extended_claim).
        for entry in pod.data.get("resource_claims") or ():
            if isinstance(entry, dict) and not entry.get("name") and entry.get("claim"):
                return {
                    "claim": f"{pod.namespace}/{entry['claim']}",
                    "requests": [
                        {"container": c, "resource": r} for c, r in entry.get("extended") or ()
                    ],
                }
        return None

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
