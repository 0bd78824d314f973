"""Whether the node's own live signs contradict the sharing its device-plugin config would
apply. PURE.

The sync resolves which config a node's plugin reads (its label, the plugin's or the
ClusterPolicy's default, the only key). Two live witnesses on the node say whether that config
is the one in force:

- the capacity: time-slicing or MPS with N > 1 replicas makes the plugin advertise N of a
  resource per device. A config replicating whole `nvidia.com/gpu` under its own name (no
  rename, no `renameByDefault`) on a node advertising exactly one per device is not in force
  there. The devices are the physical GPUs, else GPU Feature Discovery's `nvidia.com/gpu.count`:
  under MIG's single strategy that counts the MIG devices the plugin advertises as
  nvidia.com/gpu, which time-slicing would replicate too.
- GFD's labels: GFD runs its own config-manager on the same label and default, and labels the
  strategy of the config in force (`nvidia.com/gpu.sharing-strategy`: `time-slicing` or `mps`
  wherever that config replicates anything, else `none`) and its replicas. `none` (with no
  replicas label above 1) contradicts a sharing config where the node advertises the config's
  resources unreplicated. Where the capacity shows its replicas after all, the config stands: a
  GFD deployed without the plugin's config labels `none` on a node whose plugin does replicate.
  A node advertising none of them (a DRA node, a plugin not registered yet) shows nothing.

Either makes the config unverified (STACK-007, naming the facts on both sides), as a config that
cannot be read is: its entries give no resource of the node a sharing mode, and the node's
sharing is GFD's own verdict where it states one (an explicit GFD label outranks our reading of
a ConfigMap: node_sharing.sharing_strategy), else unknown, never a silent default. Where GFD
writes no sharing-strategy label (no GFD, or one older than that label) and the capacity agrees
with the config or cannot tell, the config stays the evidence.
"""

from __future__ import annotations

from collections.abc import Mapping

from inventory.snapshot import SharingConfig, SharingEntry, UnreadableConfig
from inventory.sources.node_sharing import COUNT, REPLICAS, SHARING
from inventory.sources.raw import as_int

GPU = "nvidia.com/gpu"
SHARED_SUFFIX = ".shared"
SHARING_MODES = ("time_slicing", "mps")


def config_contradiction(
    config: SharingConfig | None,
    labels: Mapping[str, str],
    capacity: Mapping[str, int],
    physical: int | None,
) -> UnreadableConfig | None:
    """The config is not in force on this node by its capacity or GFD's labels (module doc):
    the problem that says so, with both sides; None where nothing contradicts it."""
    if config is None or config.mode not in SHARING_MODES:
        return None
    facts = [
        fact
        for fact in (
            _capacity_fact(config, labels, capacity, physical),
            _gfd_fact(config, labels, capacity, physical),
        )
        if fact
    ]
    if not facts:
        return None
    # GFD's own verdict decides the node's sharing where it states one (node_sharing).
    declared = str(labels.get(SHARING, "")).strip().lower() in ("none", "time-slicing", "mps")
    sharing = "read from its own labels, not from this config" if declared else "unknown"
    return UnreadableConfig(
        "ConfigMap",
        config.namespace,
        config.configmap,
        config.key,
        "device_plugin",
        f"unverified: the config {config.ref} {_replicates(config)}, but "
        f"{' and '.join(facts)}: the config does not appear to be in force here, so the "
        f"node's sharing is {sharing}",
    )


def _capacity_fact(
    config: SharingConfig,
    labels: Mapping[str, str],
    capacity: Mapping[str, int],
    physical: int | None,
) -> str:
    """ "the node advertises N nvidia.com/gpu for its N ..." where the config would make more."""
    if config.rename_by_default:
        return ""  # the replicas would be nvidia.com/gpu.shared: nvidia.com/gpu proves nothing
    gfd_count = as_int(labels.get(COUNT))
    devices = physical or gfd_count
    if not devices:
        return ""
    what = f"{physical} physical GPUs" if physical else f"{devices} devices ({COUNT}={gfd_count})"
    advertised = capacity.get(GPU)
    for entry in config.entries:
        replicated = entry.name == GPU and not entry.rename and (entry.replicas or 0) > 1
        whole = not entry.devices and entry.device_count is None
        if replicated and whole and advertised == devices:
            return f"the node advertises {advertised} {GPU} for its {what}"
    return ""


def _gfd_fact(
    config: SharingConfig,
    labels: Mapping[str, str],
    capacity: Mapping[str, int],
    physical: int | None,
) -> str:
    """What GFD's labels say where they call the node unshared and its capacity shows the
    config's resources unreplicated; "" otherwise (no such label: an older GFD, or none)."""
    declared = str(labels.get(SHARING, "")).strip().lower()
    replicas = as_int(labels.get(REPLICAS))
    if declared != "none" or (replicas is not None and replicas > 1):
        return ""
    if not _capacity_unreplicated(config, labels, capacity, physical):
        return ""
    said = f"{SHARING}={labels[SHARING]}"
    if REPLICAS in labels:
        said += f" and {REPLICAS}={labels[REPLICAS]}"
    return f"GPU Feature Discovery, which labels the sharing of the config in force, says {said}"


def _capacity_unreplicated(
    config: SharingConfig,
    labels: Mapping[str, str],
    capacity: Mapping[str, int],
    physical: int | None,
) -> bool:
    """The node advertises the config's resources, none of them replicated. Replicated: a
    renamed or `.shared` resource (only replication makes one), more of a resource than its
    devices (GFD's `<name>.count`; the physical GPUs for nvidia.com/gpu), or any of it with no
    count to judge by. A node advertising none of them (a DRA node, a plugin not registered
    yet) shows nothing either way."""
    advertised = False
    for entry in config.entries:
        devices = (physical if entry.name == GPU else None) or as_int(
            labels.get(f"{entry.name}.count")
        )
        for name in {_advertised(config, entry), entry.name}:
            amount = capacity.get(name) or 0
            if amount and (name != entry.name or devices is None or amount > devices):
                return False
            advertised = advertised or amount > 0
    return advertised


def _advertised(config: SharingConfig, entry: SharingEntry) -> str:
    if entry.rename:
        return entry.rename
    return entry.name + SHARED_SUFFIX if config.rename_by_default else entry.name


def _replicates(config: SharingConfig) -> str:
    verb = "time-slices" if config.mode == "time_slicing" else "MPS-shares"
    entries = ", ".join(
        f"{e.name} with {e.replicas} replicas" if e.replicas else e.name for e in config.entries
    )
    return f"{verb} {entries}" if entries else f"{verb} its resources"
