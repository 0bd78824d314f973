"""How a node shares its GPUs and how many physical GPUs it has, from its labels, capacity and
device-plugin config (GFD first, then a managed cloud's labels). PURE."""

from __future__ import annotations

from inventory.snapshot import GPU_RESOURCE_PREFIX, SharingConfig
from inventory.sources.cloud_labels import (
    cloud_gpu_count,
    gke_clients_per_gpu,
    gke_partitioned,
    gke_physical_gpus,
    gke_sharing,
)
from inventory.sources.nebuly import nos_mps
from inventory.sources.node_kinds import mig_single_overrides
from inventory.sources.node_labels import sharing_label_garbled
from inventory.sources.raw import as_int

NV = GPU_RESOURCE_PREFIX  # "nvidia.com/": GFD labels share the prefix
PRODUCT, COUNT = NV + "gpu.product", NV + "gpu.count"
SHARING, REPLICAS = NV + "gpu.sharing-strategy", NV + "gpu.replicas"
MIG_STRATEGY, MIG_CONFIG = NV + "mig.strategy", NV + "mig.config"
VGPU = NV + "vgpu.present"
# GFD appends this to the product label when the GPUs are shared (time-slicing, MPS).
SHARED_SUFFIX = "-SHARED"
_SHARING_LABEL_VALUES = {"time-slicing": "time_slicing", "mps": "mps"}


def physical_gpus(labels: dict[str, str], capacity: dict[str, int]) -> int | None:
    """Physical GPUs: GFD's count, else the cloud's label, else a GKE-shared node's capacity
    divided by its clients per GPU; None rather than the capacity of a shared node."""
    gfd = as_int(labels.get(COUNT))
    if mig_single_overrides(labels):
        return None  # GFD's count is of MIG devices here; the physical count is not stated
    if gfd is not None:
        return gfd
    cloud = cloud_gpu_count(labels)
    return cloud if cloud is not None else gke_physical_gpus(labels, capacity)


def sharing_strategy(
    labels: dict[str, str],
    capacity: dict[str, int],
    config: SharingConfig | None,
    *,
    config_unknown: bool = False,
) -> str:
    """How the node shares its GPUs: GFD's own labels first, then the device-plugin config;
    "unknown" when it would come from a config that could not be read (never "none")."""
    declared = labels.get(SHARING, "").strip().lower()
    if declared in _SHARING_LABEL_VALUES:
        return _SHARING_LABEL_VALUES[declared]
    if (as_int(labels.get(REPLICAS)) or 0) > 1:
        return "time_slicing"
    if nos_mps(labels):
        return "mps"  # nos's MPS slices: GFD does not know of its device plugin's sharing
    if sharing_label_garbled(labels):
        return "unknown"  # GFD said something we cannot read: never "none" (STACK-007)
    if not declared and labels.get(PRODUCT, "").endswith(SHARED_SUFFIX):
        # -SHARED means time-slicing or MPS; with no label saying which, assume the one with
        # no isolation at all rather than report the node as unshared.
        return "time_slicing"
    gke = gke_sharing(labels) if not declared else None
    if gke:
        return gke  # time-sharing wins over a partition size: GKE time-shares MIG instances
    if mig_enabled(labels, capacity) or (not declared and gke_partitioned(labels)):
        return "mig"
    if labels.get(VGPU, "").strip().lower() == "true":
        return "vgpu"
    # An explicit GFD verdict (e.g. "none") outranks our reading of a ConfigMap.
    if not declared and config_unknown:
        return "unknown"
    if not declared and config is not None and config.mode in ("time_slicing", "mps"):
        return config.mode
    if not declared and capacity_replicas(labels, capacity):
        # More nvidia.com/gpu than physical GPUs: something replicates them. Time-slicing or
        # MPS; with nothing saying which, the one with no isolation (as for "-SHARED").
        return "time_slicing"
    return "none"


def capacity_replicas(labels: dict[str, str], capacity: dict[str, int]) -> int | None:
    """Replicas per GPU the node's capacity proves: its `nvidia.com/gpu` over the physical
    count a label gives (GFD's or the cloud's), when larger and whole; None otherwise. Not on a
    MIG node (single strategy advertises each MIG instance as nvidia.com/gpu, as GKE does each
    of its partitions)."""
    count = physical_gpus(labels, capacity)
    advertised = capacity.get(NV + "gpu") or 0
    if not count or advertised <= count or advertised % count:
        return None
    if labels.get(MIG_STRATEGY) == "single" or "-MIG-" in labels.get(PRODUCT, ""):
        return None
    if gke_partitioned(labels):
        return None  # GKE's MIG partitions, each an nvidia.com/gpu: instances, not replicas
    return advertised // count


def mig_replicas(labels: dict[str, str]) -> int | None:
    """The most replicas GFD labels a MIG device type with (`nvidia.com/mig-<profile>.replicas`,
    the mixed strategy's MIG devices time-sliced); None where none is over 1."""
    found = [
        n
        for k, v in labels.items()
        if k.startswith(NV + "mig-") and k.endswith(".replicas") and (n := as_int(v) or 0) > 1
    ]
    return max(found, default=None)


def mig_enabled(labels: dict[str, str], capacity: dict[str, int]) -> bool:
    # MIG resources prove MIG by themselves: only the device plugin's mixed strategy advertises
    # nvidia.com/mig-* (an AKS MIG pool runs it with no GFD at all, DESIGN §7).
    if has_mig_resources(capacity):
        return True
    # The operator labels every node with the cluster's MIG strategy, MIG-capable or not, so the
    # strategy alone proves nothing: MIG needs a layout other than all-disabled.
    if labels.get(MIG_STRATEGY) not in ("single", "mixed"):
        return False
    layout = labels.get(MIG_CONFIG)
    return bool(layout and layout != "all-disabled")


def has_mig_resources(capacity: dict[str, int]) -> bool:
    return any(k.startswith(NV + "mig-") and v > 0 for k, v in capacity.items())


def node_mig_strategy(
    labels: dict[str, str], capacity: dict[str, int], plugin: str | None
) -> str | None:
    """The MIG strategy the node's device plugin runs: GFD's label; else `mixed` where the node
    advertises `nvidia.com/mig-*` (only the mixed strategy names MIG devices so; single
    advertises them as nvidia.com/gpu); else the plugin's own setting where it sets single or
    mixed (`plugin`: its --mig-strategy, MIG_STRATEGY or config flags.migStrategy). None
    otherwise: a strategy nothing states is unknown, never a guessed single."""
    label = labels.get(MIG_STRATEGY)
    if label:
        return label
    if has_mig_resources(capacity):
        return "mixed"
    said = (plugin or "").strip().lower()
    return said if said in ("single", "mixed") else None


def node_replicas(
    labels: dict[str, str], capacity: dict[str, int], config: SharingConfig | None
) -> int | None:
    replicas = as_int(labels.get(REPLICAS))
    mig = mig_replicas(labels)
    if mig and (replicas or 0) <= 1:
        # The mixed strategy's MIG devices time-sliced while whole GPUs are not: GFD labels
        # each MIG device type's replicas, and nvidia.com/gpu.replicas 1.
        return mig
    if replicas is None and config is not None and config.replicas:
        return config.replicas
    if replicas is None and gke_sharing(labels) in ("time_slicing", "mps"):
        return gke_clients_per_gpu(labels)
    return replicas if replicas is not None else capacity_replicas(labels, capacity)
