"""The nodes of a snapshot and the GPU configuration they run with (device-plugin sharing,
the ConfigMaps that hold it, the ones pods read environment from)."""

from __future__ import annotations

from dataclasses import dataclass, field

from inventory.snapshot.accelerators import is_judged_accelerator

# "unknown": the device-plugin config that decides it could not be read and GFD's labels do
# not say (STACK-007); the checks then judge the node as time-sliced, the weakest isolation.
SHARING_STRATEGIES = ("none", "time_slicing", "mps", "mig", "vgpu", "unknown")


@dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str


LABEL_KIND = "NodeLabel"  # UnreadableConfig.kind of a node label; its name is the label's key
# UnreadableConfig.kind of what the node's capacity leaves undecided; its name is the resource.
CAPACITY_KIND = "NodeCapacity"


@dataclass(frozen=True)
class UnreadableConfig:
    """GPU configuration the node's stack uses that could not be read (STACK-007)."""

    # "ConfigMap", "ClusterPolicy", "DaemonSet", LABEL_KIND (a GPU label of the node itself) or
    # CAPACITY_KIND (a resource of the node's capacity)
    kind: str
    namespace: str
    name: str
    key: str  # the ConfigMap key; "" for a ClusterPolicy
    purpose: str  # "device_plugin", "mig_parted" or "gpu_operator"
    error: str


@dataclass(frozen=True)
class SharedResource:
    """A resource the device plugin advertises on a node as replicas of some of its devices
    (time-slicing or MPS), as the node's config and capacity show it in effect."""

    name: str  # as advertised: "nvidia.com/gpu", "nvidia.com/gpu.shared", "nvidia.com/gpu-ts"
    source: str  # the resource whose devices it replicates ("nvidia.com/gpu", a MIG profile)
    mode: str  # "time_slicing" or "mps"
    replicas: int | None = None
    devices: tuple[str, ...] = ()  # the devices it covers as the config names them; () = all
    units: int | None = None  # physical devices behind it, where known
    # The name also carries devices that are not replicated (a `devices` subset with no rename):
    # a pod asking for it may get either.
    mixed: bool = False
    note: str = ""  # how the node's capacity bears the config out, when it does not plainly


@dataclass(frozen=True)
class Node:
    name: str
    # The Node object's identity (metadata.uid) and when it was created (metadata.
    # creationTimestamp, RFC 3339 as the API gives it); "" where not known (a node stored
    # before these were read, an nvidia-smi import). A name is reused when a cloud autoscaler
    # or Karpenter replaces a VM: the uid tells the machines apart (inventory.holdings).
    uid: str = ""
    created: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    # nvidia.com/* capacity as integers (time-slicing multiplies nvidia.com/gpu by replicas).
    gpu_capacity: dict[str, int] = field(default_factory=dict)
    gpu_model: str | None = None
    # Where gpu_model comes from when no GFD label gives it and the NVIDIA DRA driver's
    # ResourceSlices do (or why it is unknown: they disagree); "" else.
    gpu_model_basis: str = ""
    gpu_count: int | None = None  # physical GPUs, from nvidia.com/gpu.count
    # Where the count comes from, on a GPU Operator sandbox node (whose capacity counts what
    # VMs get: inventory.sources.node_kinds.sandbox_gpus) or from an nvidia-smi import, or why
    # it is unknown there (a vm-vgpu node's capacity counts vGPUs); "" else (GFD's or the
    # cloud's label on any other node).
    gpu_count_basis: str = ""
    # Of gpu_count, the GPUs of a container-mode node bound to vfio-pci and advertised whole to
    # VMs (a kubevirt-gpu-device-plugin beside NVIDIA's): NVML, hence GFD's count and
    # nvidia.com/gpu, never sees them (inventory.sources.node_kinds.vfio_gpus_beside). 0 else.
    passthrough_gpus: int = 0
    driver_version: str | None = None
    # "gfd-label", "gfd-label-legacy", "driver-pod", "vgpu-manager-pod" (a vm-vgpu node's host
    # driver is its vGPU Manager, judged by the bulletins' vGPU Manager rows),
    # "vgpu-guest-driver-pod" (a vGPU guest VM's own driver, from its guest driver pod's tag),
    # "nvidia-smi", "dra-resourceslice" (the NVIDIA DRA driver's slices publish it: no GFD label
    # gives it)
    driver_version_source: str | None = None
    # The ResourceSlice a "dra-resourceslice" driver version comes from, or why it is unknown
    # where the node's slices disagree; "" else (inventory.sources.dra_stack).
    driver_version_basis: str = ""
    cuda_driver_version: str | None = None
    container_toolkit_version: str | None = None
    device_plugin_version: str | None = None
    gpu_operator_version: str | None = None
    dcgm_exporter_version: str | None = None
    mig_manager_version: str | None = None
    # The NVIDIA DRA driver's kubelet plugin (k8s-dra-driver-gpu), which hands out the GPUs
    # where DRA replaces the device plugin: its own versions (25.x), never the plugin's (0.x).
    dra_driver_version: str | None = None
    firmware_version: str | None = None
    sharing_strategy: str = "none"
    # Why the strategy is what GFD and the device-plugin config do not say: a fractional
    # scheduler's (inventory.sources.fractional_nodes); which device-plugin config is in force
    # where the node's device-plugin.config label is not what chose it (the plugin ignores the
    # label) or the plugin that would read it is not in the snapshot; "" where they decide it.
    sharing_basis: str = ""
    time_slicing_replicas: int | None = None
    # Each GPU's own sharing where it is not the node's (the weakest of its GPUs): {index:
    # strategy}, as DRA claims hold them (inventory.sources.dra_sharing.gpu_sharing); empty
    # where every GPU shares as the node does, or which GPU a device is cannot be told.
    gpu_sharing: dict[str, str] = field(default_factory=dict)
    mig_strategy: str | None = None
    mig_config: str | None = None
    mig_config_state: str | None = None
    # A MIG reconfiguration in progress (state pending or rebooting): when a sync first saw the
    # state, and when a sync last saw it (ISO 8601, set by inventory.sync; the label has no time).
    mig_config_state_since: str | None = None
    mig_config_state_seen: str | None = None
    device_plugin_config: str | None = None  # value of label nvidia.com/device-plugin.config
    # The device-plugin config in force on the node as the sync resolved it (its label, else the
    # plugin's DEFAULT_CONFIG or the ClusterPolicy's default, else the plugin's fallback; only
    # where its plugin runs): SharingConfig.ref, "" for none; None when not resolved (synced
    # before this was read).
    device_plugin_config_used: str | None = None
    # Whether the node's device plugin reads that label: True where a config-manager runs (the
    # GPU Operator's plugin, the chart with config.map), False where the plugin is seen to run
    # without one (it reads its one mounted config file, or none: whole GPUs), None where the
    # snapshot does not show it (and for a node synced before this was read).
    device_plugin_label_read: bool | None = None
    # How the device plugin hands devices to the runtime on this node (envvar, volume-mounts,
    # cdi-annotations, cdi-cri; comma-joined as set), resolved once at sync from its pod, its
    # config and the ClusterPolicy (inventory.visible_devices.device_list_strategy); None when
    # unknown. The source says where it was read; "" when the sync did not resolve it.
    device_list_strategy: str | None = None
    device_list_strategy_source: str = ""
    # Whether the GPU Operator's container toolkit runs (or would run) here, so that the
    # ClusterPolicy's `cdi` and `toolkit` settings configure the node's runtime
    # (plugin_placement.operator_toolkit_here); None when not resolved (synced before this).
    operator_toolkit: bool | None = None
    # Who upgrades each GPU-stack component here (inventory.stack_managers.who: "GPU Operator",
    # "node image", "host packages", "own chart (DaemonSet ns/name)", "GKE node pool",
    # "unknown"), resolved at sync for the node and patch pages; {} before it was resolved.
    upgrade_by: dict[str, str] = field(default_factory=dict)
    # Per resource the node's device-plugin config replicates (rename, devices): its mode.
    # Empty when no readable config applies; other resources keep whole devices.
    resource_sharing: tuple[SharedResource, ...] = ()
    os_image: str | None = None
    kernel_version: str | None = None
    container_runtime: str | None = None
    kubelet_version: str | None = None
    unreadable_configs: tuple[UnreadableConfig, ...] = ()
    # GPU-stack component (inventory.components.COMPONENT_FIELDS) -> where the snapshot shows
    # it deployed for this node (its pod, or a DaemonSet that should run one here) ...
    deployed: dict[str, str] = field(default_factory=dict)
    # ... or why it is not deployed here (no pod, no DaemonSet scheduling here): such a
    # component is "not installed", which is not "version unknown".
    not_installed: dict[str, str] = field(default_factory=dict)
    # A node with no GPU capacity: what still says it may hold GPUs (a GPU label, a GPU-stack
    # pod, a ResourceSlice of GPUs; inventory.sources.gpu_signs), () when nothing does: a node
    # known to have no GPU, with nothing to patch. None on a GPU node, and where not read (a
    # node stored before this was read).
    gpu_signs: tuple[str, ...] | None = None
    # A node with no GPU capacity or count whose Running pods run under NVIDIA's container
    # runtime by RuntimeClass (inventory.sources.nvidia_runtime: a Jetson or a host-installed
    # toolkit used without a device plugin): each such pod and its class. It is a GPU node of
    # unknown model and count; () where the node's GPUs are otherwise known, or none shows it.
    nvidia_runtime: tuple[str, ...] = ()
    # Other vendors' accelerators the node's capacity lists (inventory.snapshot.accelerators:
    # amd.com/gpu, habana.ai/gaudi, ...) -> count. Their stack is not read: gpu_model and
    # gpu_count stay NVIDIA's, and such a node is no GPU node for NVIDIA's checks.
    accelerator_resources: dict[str, int] = field(default_factory=dict)
    # Other vendors' DRA drivers (AMD's gpu.amd.com) -> how many GPU devices their
    # ResourceSlices publish for the node (inventory.sources.gpu_signs.dra_accelerators): a
    # DRA-only node has no capacity to list them, and its stored NVIDIA sharing strategy
    # ("none") says nothing of them, as on the device plugin's nodes.
    dra_accelerators: dict[str, int] = field(default_factory=dict)
    # Who describes the node: "kubernetes" (the API, live or a kubectl snapshot) or
    # "nvidia-smi" (a host the API does not list, known only from its `nvidia-smi -q -x`
    # import: no labels, taints, pods or Kubernetes components; a sync does not delete it).
    described_by: str = "kubernetes"

    @property
    def container_gpus(self) -> int | None:
        """The GPUs the NVIDIA driver holds for containers (nvidia.com/gpu and MIG devices come
        from them): the physical count less the vfio-bound ones VMs get."""
        return None if self.gpu_count is None else self.gpu_count - self.passthrough_gpus

    @property
    def is_gpu_node(self) -> bool:
        """Holds NVIDIA GPUs: the node NVIDIA's stack, sharing and telemetry checks judge."""
        return (
            bool(self.gpu_count)
            or any(v > 0 for v in self.gpu_capacity.values())
            or bool(self.nvidia_runtime)
        )

    @property
    def is_accelerator_node(self) -> bool:
        """Holds GPUs of any vendor the vendor-neutral checks judge (NVIDIA's, AMD's, Intel's,
        Gaudi): the node whose pool, taints and tenants they judge whatever the vendor. A node
        whose GPUs only another vendor's DRA driver publishes (dra_accelerators) is one too: it
        has no capacity to list them."""
        return (
            self.is_gpu_node
            or any(
                is_judged_accelerator(name) and n > 0
                for name, n in self.accelerator_resources.items()
            )
            or any(n > 0 for n in self.dra_accelerators.values())
        )


@dataclass(frozen=True)
class SharingEntry:
    """One entry of `sharing.timeSlicing.resources` / `sharing.mps.resources`, as written."""

    name: str  # the resource whose devices are replicated
    rename: str | None = None
    replicas: int | None = None
    devices: tuple[str, ...] = ()  # a list of GPU / MIG indices or UUIDs; () with no count = all
    device_count: int | None = None  # `devices: N`: the first N devices


@dataclass(frozen=True)
class SharingConfig:
    """One device-plugin config (a key of a ConfigMap) and what it does to GPUs."""

    namespace: str
    configmap: str
    key: str
    mode: str  # "time_slicing", "mps" or "none"
    replicas: int | None = None
    fail_requests_greater_than_one: bool = False
    rename_by_default: bool = False
    resources: tuple[str, ...] = ()
    mig_strategy: str | None = None
    # How the plugin hands devices to the runtime (envvar, volume-mounts, cdi-annotations,
    # cdi-cri); bulletins condition some exposures on it.
    device_list_strategy: str | None = None
    entries: tuple[SharingEntry, ...] = ()  # the replicated resources of the active mode
    # How the sync matched it where the GPU stack's own naming of its config (the
    # ClusterPolicy, a DaemonSet's volumes) was not read (sources/config_fallback.py); "" when
    # the stack names it. A matched config never makes a node share by itself.
    matched: str = ""

    @property
    def ref(self) -> str:
        """`namespace/configmap:key`, how a node names the config in force on it."""
        return f"{self.namespace}/{self.configmap}:{self.key}"


@dataclass(frozen=True)
class ConfigMap:
    """A ConfigMap we keep: only those recognised as device-plugin, MIG or vGPU Device Manager
    configuration (the last by its keys and hash alone), and
    the one documented setting of a CNI's (purpose "aws_vpc_cni": inventory/sources/
    cni_config.py), and EKS aws-auth's role mappings (purpose "aws_auth": inventory/sources/
    aws_auth.py). Other ConfigMaps may carry credentials and are never stored."""

    namespace: str
    name: str
    purpose: str  # "device_plugin", "mig_parted", "vgpu_device_manager" or "aws_vpc_cni"
    keys: tuple[str, ...] = ()
    data_hash: str = ""
    # mig-parted configs only: the keys that hold one, as written (the MIG partitioner loads a
    # node's layout from them). Layouts are not secret; other keys are never kept.
    data: dict[str, str] = field(default_factory=dict)
    # key -> why it could not be read (too deep, too large, not YAML); its settings are unknown.
    unreadable: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class EnvConfigMap:
    """A ConfigMap a pod reads environment from (envFrom, or configMapKeyRef): its key names,
    the values only of the keys that become NVIDIA_VISIBLE_DEVICES in some pod, and per other
    key what POD-008 needs to judge it as a credential without its value. Nothing else of it is
    kept (it may hold anything)."""

    namespace: str
    name: str
    keys: tuple[str, ...] = ()
    values: dict[str, str] = field(default_factory=dict)
    # key -> inventory.credential_shapes.ValueFacts.as_dict() of its value (length, vendor
    # shape and public prefix, whether it looks random...), for keys that are no placeholder.
    # Never the value: a ConfigMap is no secret store, but we must not become its copy.
    credentials: dict[str, dict] = field(default_factory=dict)
