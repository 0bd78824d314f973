"""MIG layouts to and from mig-parted configs: a node's layout from its `nvidia.com/mig.config`
label and the cluster's mig-parted ConfigMap, and a layout as a mig-parted config snippet.

Pure: the caller reads the node and the ConfigMaps; here they are plain values. mig-parted
configs count profiles per GPU; they carry no start slots, so a loaded layout is placed afresh
by partitioner.layout (the driver also chooses the slots itself when mig-parted applies it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import yaml

from inventory.mig_profiles import DEVICE_IDS, MODELS, GpuModel, model_key
from inventory.sources.gpu_operator import DEFAULT_MIG_PARTED_CONFIGMAP
from inventory.sources.mig_parted import (
    MigPartedConfig,
    MigPartedEntry,
    matching_entries,
    mig_parted_from_configmap,
)
from partitioner.compute import ComputeRequest
from partitioner.layout import InstanceRequest, Placement, to_mig_parted

DEFAULT_EXPORT_NAME = "custom-layout"
GKE_PARTITION_SOURCE = "GKE partition size (node label cloud.google.com/gke-gpu-partition-size)"
_CONFIG_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")
_CI_KEY = re.compile(r"^(?P<k>\d+)c\.(?P<gi>\d+g\..+)$")
# GPUs per node looked at when telling whether a config treats them alike (count unknown: 8).
DEFAULT_GPUS, MAX_GPUS = 8, 16


@dataclass(frozen=True, slots=True)
class ConfigSource:
    """A mig-parted ConfigMap the cluster holds; `data` is its `data` (key -> YAML text), or
    None when only its name is known (synced before contents were kept)."""

    namespace: str
    name: str
    data: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class NodeLayout:
    """What a node's mig-parted config asks of one of its GPUs, or why that is unknown."""

    config_name: str
    source: str = ""
    device: int = 0
    mig_enabled: bool = True
    instances: tuple[InstanceRequest, ...] = ()
    notes: tuple[str, ...] = ()
    error: str | None = None
    model: str | None = None


# --- export ----------------------------------------------------------------------------------


def export_name(name: str | None) -> str:
    """A config name safe to put in the snippet and a file name; the default otherwise."""
    name = (name or "").strip()
    return name if _CONFIG_NAME.match(name) else DEFAULT_EXPORT_NAME


def mig_parted_yaml(config_name: str, placements: Sequence[Placement]) -> str:
    """The layout as a mig-parted v1 config, with comments saying what it cannot carry."""
    name = export_name(config_name)
    lines = [
        "# mig-parted v1 config (github.com/NVIDIA/mig-parted), exported by gpuposture.",
        "# mig-parted counts profiles per GPU: it records no start slots and no tenants, and",
        "# the driver picks the slots when it applies the config. The layout checked was:",
    ]
    for p in placements:
        tenant = f" for {p.tenant}" if p.tenant else ""
        one = p.compute_instances[0].profile if len(p.compute_instances) == 1 else ""
        lines.append(f"#   {p.profile} at slot {p.start}{tenant}" + (f", as {one}" if one else ""))
        if len(p.compute_instances) > 1:
            split = ", ".join(
                ci.profile + (f" ({ci.tenant})" if ci.tenant else "") for ci in p.compute_instances
            )
            lines.append(f"#     split into compute instances {split}: mig-parted makes one")
            lines.append("#     per GPU instance, so create these with `nvidia-smi mig -cci`")
    body = yaml.safe_dump(to_mig_parted(name, placements), sort_keys=False)
    return "\n".join(lines) + "\n" + body


# --- a node's layout -------------------------------------------------------------------------


def default_config(gpu: GpuModel, name: str) -> MigPartedEntry | None:
    """The entry the GPU Operator's default config (`default-mig-parted-config`) gives a GPU of
    model `gpu` under config `name`, or None when it has no such config for that model.

    That config follows one pattern: all-disabled, all-enabled (no instances), all-balanced
    (2 x 1g, 1 x 2g, 1 x 3g), and all-<profile> (as many as fit, "+me" written ".me").
    tests/inventory/test_mig_config.py holds this against the real file for every model.
    """
    if name == "all-disabled":
        return MigPartedEntry(devices="all", mig_enabled=False, mig_devices={})
    if name == "all-enabled":
        return MigPartedEntry(devices="all", mig_enabled=True, mig_devices={})
    if name == "all-balanced":
        devices = {_plain(gpu, 1, 1): 2, _plain(gpu, 2, 2): 1, _plain(gpu, 3, 4): 1}
        return MigPartedEntry(devices="all", mig_enabled=True, mig_devices=devices)
    if not name.startswith("all-"):
        return None
    wanted = name[len("all-") :]
    if wanted.endswith(".me"):
        wanted = wanted[: -len(".me")] + "+me"
    prof = gpu.profiles.get(wanted)
    if prof is None:
        return None
    return MigPartedEntry(
        devices="all", mig_enabled=True, mig_devices={prof.name: prof.max_instances}
    )


def _plain(gpu: GpuModel, compute: int, size: int) -> str:
    """The profile of that many compute and memory slices without media extensions."""
    return next(
        p.name
        for p in gpu.profiles.values()
        if (p.compute, p.size) == (compute, size) and "+" not in p.name
    )


def requests_of(entry: MigPartedEntry) -> tuple[InstanceRequest, ...]:
    """One GPU-instance request per instance the entry counts; a "1c.3g.40gb" key is a 3g.40gb
    GPU instance holding one 1-slice compute instance (mig-parted makes one CI per GI)."""
    made: list[InstanceRequest] = []
    for name, count in entry.mig_devices.items():
        match = _CI_KEY.match(name)
        if match:
            req = InstanceRequest(
                match["gi"], compute_instances=(ComputeRequest(f"{match['k']}c"),)
            )
        else:
            req = InstanceRequest(name)
        made += [req] * count
    return tuple(made)


def node_layout(
    *,
    gpu_model: str,
    mig_config: str,
    configmap: str = DEFAULT_MIG_PARTED_CONFIGMAP,
    sources: Sequence[ConfigSource] = (),
    device: int = 0,
    gpu_count: int | None = None,
) -> NodeLayout:
    """The layout config `mig_config` gives GPU `device` of a node whose GPUs are `gpu_model`.

    The config is looked up in the ConfigMap MIG Manager reads (`configmap`), then in the
    cluster's other mig-parted ConfigMaps. When contents were not kept, the GPU Operator's own
    default config can still be read for its standard names (default_config).
    """
    key = model_key(gpu_model) if gpu_model else None
    if key is None:
        what = repr(gpu_model) if gpu_model else "unknown (no nvidia.com/gpu.product label)"
        known = ", ".join(MODELS)
        error = f"the node's GPU model {what} is not a MIG model the partitioner knows ({known})"
        return NodeLayout(mig_config, error=error)
    if not mig_config:
        error = "the node has no nvidia.com/mig.config label: MIG Manager applies no config to it"
        return NodeLayout("", model=key, error=error)
    found = _find_config(mig_config, configmap, sources, MODELS[key])
    if isinstance(found, str):
        return NodeLayout(mig_config, model=key, error=found)
    config, source, notes = found
    return _resolve(config, mig_config, key, device, gpu_count, source, notes)


def partition_layout(*, gpu_model: str | None, size: str) -> NodeLayout:
    """The layout GKE gives each GPU of a node whose pool it partitions by `size` (label
    cloud.google.com/gke-gpu-partition-size): as many GPU instances of that profile as fit (the
    counts GKE documents per size are each profile's maximum), each one an `nvidia.com/gpu`.
    GKE, like mig-parted, states no start slots: the driver picks them."""
    key = model_key(gpu_model) if gpu_model else None
    if key is None:
        what = repr(gpu_model) if gpu_model else "unknown"
        error = f"the node's GPU model {what} is not a MIG model the partitioner knows"
        return NodeLayout(size, source=GKE_PARTITION_SOURCE, error=f"{error} ({', '.join(MODELS)})")
    prof = MODELS[key].profiles.get(size)
    if prof is None:
        known = ", ".join(MODELS[key].profiles)
        error = f"GKE partition size {size!r} is not a MIG profile of {key} ({known})"
        return NodeLayout(size, source=GKE_PARTITION_SOURCE, model=key, error=error)
    note = (
        f"GKE makes {prof.max_instances} partition(s) of {size} on each GPU; it states no slots, "
        "so the placements shown are the partitioner's, not read from the node"
    )
    instances = (InstanceRequest(size),) * prof.max_instances
    return NodeLayout(
        size, source=GKE_PARTITION_SOURCE, instances=instances, notes=(note,), model=key
    )


def _find_config(
    name: str, configmap: str, sources: Sequence[ConfigSource], gpu: GpuModel
) -> tuple[MigPartedConfig, str, list[str]] | str:
    """The config named `name`, where it came from and notes; or why it was not found."""
    ordered = sorted(sources, key=lambda s: (s.name != configmap, s.namespace, s.name))
    for src in ordered:
        if src.data is None:
            continue
        texts = tuple(sorted((str(k), v) for k, v in src.data.items() if isinstance(v, str)))
        for data_key, config in _parsed(texts).items():
            if name in config.configs:
                where = f"ConfigMap {src.namespace}/{src.name} key {data_key}"
                notes = []
                if src.name != configmap:
                    notes.append(
                        f"MIG Manager reads ConfigMap {configmap}; config {name!r} was found "
                        f"in {src.namespace}/{src.name} instead"
                    )
                return config, where, notes
    unread = [f"{s.namespace}/{s.name}" for s in ordered if s.data is None]
    if configmap == DEFAULT_MIG_PARTED_CONFIGMAP and (entry := default_config(gpu, name)):
        note = (
            "ConfigMap contents were not kept by the last sync (sync again), so this is "
            f"the GPU Operator's default config for {name!r}"
            if unread
            else f"no ConfigMap holds {name!r}; this is the GPU Operator's default config for it"
        )
        return MigPartedConfig("v1", {name: (entry,)}), "GPU Operator default config", [note]
    if unread:
        return (
            f"mig-parted config {name!r} cannot be read: the last sync kept no contents "
            f"(sync again) of ConfigMap {', '.join(unread)}"
        )
    return (
        f"no mig-parted config named {name!r} in this cluster (MIG Manager reads ConfigMap "
        f"{configmap}; {len(sources)} mig-parted ConfigMap(s) seen)"
    )


@lru_cache(maxsize=8)
def _parsed(texts: tuple[tuple[str, str], ...]) -> dict[str, MigPartedConfig]:
    # The same ConfigMap is read on every page view and API call: parse each text once.
    return mig_parted_from_configmap({"data": dict(texts)})


def _resolve(
    config: MigPartedConfig,
    name: str,
    key: str,
    device: int,
    gpu_count: int | None,
    source: str,
    notes: list[str],
) -> NodeLayout:
    entries = config.configs[name]
    device_id, matches = _matches(config, name, key, device)
    if any(e.device_filter for e in entries):
        notes.append(f"{name!r} has entries per GPU model; using the one for {key} ({device_id})")
    if len(matches) > 1:
        notes.append(
            f"{len(matches)} entries of {name!r} apply to GPU {device}; mig-parted applies "
            "them in order, so the last one stays"
        )
    layouts = _per_gpu(config, name, device_id, gpu_count)
    if len({text for _, text in layouts}) > 1:
        described = "; ".join(f"{gpus}: {text}" for gpus, text in layouts)
        notes.append(
            f"{name!r} gives this node's GPUs different layouts ({described}); showing GPU {device}"
        )
    if not matches:
        error = (
            f"config {name!r} has no entry for GPU {device} of a {key}: mig-parted leaves "
            "that GPU as it is"
        )
        return NodeLayout(name, source, device, model=key, notes=tuple(notes), error=error)
    entry = matches[-1]
    if not entry.mig_enabled:
        notes.append(f"config {name!r} turns MIG off on GPU {device}")
    return NodeLayout(
        name, source, device, entry.mig_enabled, requests_of(entry), tuple(notes), model=key
    )


def _matches(
    config: MigPartedConfig, name: str, key: str, device: int
) -> tuple[str, tuple[MigPartedEntry, ...]]:
    """The first of the model's PCI ids any entry applies to, and those entries."""
    ids = DEVICE_IDS.get(key, ())
    for device_id in ids:
        found = matching_entries(config, name, device_id, device)
        if found:
            return device_id, found
    return (ids[0] if ids else ""), ()


def _per_gpu(
    config: MigPartedConfig, name: str, device_id: str, gpu_count: int | None
) -> list[tuple[str, str]]:
    """("GPUs 0-3", layout in words) for runs of the node's GPUs that get the same layout."""
    runs: list[tuple[int, int, str]] = []
    for index in range(min(gpu_count or DEFAULT_GPUS, MAX_GPUS)):
        found = matching_entries(config, name, device_id, index)
        text = _describe(found[-1]) if found else "left as it is"
        if runs and runs[-1][2] == text:
            runs[-1] = (runs[-1][0], index, text)
        else:
            runs.append((index, index, text))
    return [(f"GPU {a}" if a == b else f"GPUs {a}-{b}", text) for a, b, text in runs]


def _describe(entry: MigPartedEntry) -> str:
    if not entry.mig_enabled:
        return "MIG off"
    return ", ".join(f"{n} x {p}" for p, n in entry.mig_devices.items()) or "MIG on, empty"
