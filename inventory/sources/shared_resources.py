"""Which resources a node's device-plugin config replicates, as the node shows them. PURE.

A time-slicing or MPS entry names the resource whose devices it replicates (`name`), the name
the replicas are advertised under (`rename`, or `<name>.shared` with `renameByDefault`), how
many replicas each device gives and which devices it covers (`devices`: all, the first N, or a
list of indices or UUIDs). The devices it leaves out keep their whole-device resource, so a node
can serve `nvidia.com/gpu-ts` time-sliced on GPUs 0-1 and `nvidia.com/gpu` whole on GPUs 2-7.

The upstream NVIDIA device plugin (through v0.17) ignores a custom `rename` and any `devices`
other than all for time-slicing ("not yet supported ... Ignoring") and replicates every device
under the original name (or `.shared`). Forks honour them. The node's capacity tells which
happened: a renamed resource in the capacity was honoured; the original name there instead
means the plugin replicated every device under it. With no capacity to read, the config is
taken as written.
"""

from __future__ import annotations

from collections.abc import Mapping

from inventory.snapshot import SharedResource, SharingConfig, SharingEntry

SHARED_SUFFIX = ".shared"
GPU = "nvidia.com/gpu"
MIG_PREFIX = "nvidia.com/mig-"


def shared_resources(
    config: SharingConfig | None, capacity: Mapping[str, int], gpu_count: int | None
) -> tuple[SharedResource, ...]:
    """The resources `config` replicates on a node with this capacity and GPU count."""
    if config is None or config.mode not in ("time_slicing", "mps"):
        return ()
    return tuple(
        sorted(
            (_effective(config, entry, capacity, gpu_count) for entry in config.entries),
            key=lambda r: r.name,
        )
    )


def _advertised(config: SharingConfig, entry: SharingEntry) -> str:
    if entry.rename:
        return entry.rename
    return entry.name + SHARED_SUFFIX if config.rename_by_default else entry.name


def _effective(
    config: SharingConfig, entry: SharingEntry, capacity: Mapping[str, int], gpu_count: int | None
) -> SharedResource:
    name, devices, count, note = _advertised(config, entry), entry.devices, entry.device_count, ""
    default_name = entry.name + SHARED_SUFFIX if config.rename_by_default else entry.name
    if capacity and not capacity.get(name) and name != default_name and capacity.get(default_name):
        note = (
            f"the config renames {entry.name} to {name}, but the node advertises "
            f"{default_name}: the device plugin ignored the rename and its device subset "
            "(as the upstream plugin does) and replicates every device"
        )
        name, devices, count = default_name, (), None
    subset = bool(devices) or count is not None
    return SharedResource(
        name=name,
        source=entry.name,
        mode=config.mode,
        replicas=entry.replicas,
        devices=devices or ((f"first {count}",) if count is not None else ()),
        units=_units(entry, name, devices, count, capacity, gpu_count),
        # Without a rename, replicas of the subset and the untouched devices share one name.
        mixed=subset and name == entry.name,
        note=note,
    )


def _units(
    entry: SharingEntry,
    name: str,
    devices: tuple[str, ...],
    count: int | None,
    capacity: Mapping[str, int],
    gpu_count: int | None,
) -> int | None:
    """Physical devices behind the replicated resource, from the config and the capacity."""
    if devices:
        return len(devices)
    if count is not None:
        return count
    advertised, replicas = capacity.get(name), entry.replicas
    if advertised and replicas and advertised >= replicas:
        return advertised // replicas
    return gpu_count if entry.name == GPU else None


def replicates_here(config: SharingConfig, capacity: Mapping[str, int]) -> bool:
    """Whether the config replicates anything this node has: a resource the node advertises
    (under its name or the name the config gives its replicas); a whole-GPU entry also where the
    node advertises nothing of it yet (its GPUs may just not be advertised yet), but not on a
    node whose GPUs are all in MIG mode (MIG resources, no whole GPU: the mixed strategy), which
    has no whole GPU to replicate. A MIG entry only where the node advertises that MIG resource.
    One cluster-wide config often lists MIG profiles beside `nvidia.com/gpu`, or only MIG
    profiles for the MIG nodes: a node without them shares nothing by those entries."""
    all_mig = _all_mig(capacity)
    for entry in config.entries:
        if capacity.get(entry.name) or capacity.get(_advertised(config, entry)):
            return True
        if not entry.name.startswith(MIG_PREFIX) and not all_mig:
            return True
    return not config.entries  # a mode with no entries to judge by: as written


def _all_mig(capacity: Mapping[str, int]) -> bool:
    """The node advertises MIG devices and no whole GPU (mixed strategy, every GPU in MIG
    mode; the single strategy advertises its MIG devices as nvidia.com/gpu)."""
    whole = any(capacity.get(name) for name in (GPU, GPU + SHARED_SUFFIX))
    return not whole and any(k.startswith(MIG_PREFIX) and v > 0 for k, v in capacity.items())
