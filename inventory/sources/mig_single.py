"""The physical GPUs of a node GPU Feature Discovery labels under the MIG single strategy. PURE.

There GFD overwrites `nvidia.com/gpu.count` with the number of MIG devices and names the
profile in the product label (`NVIDIA-H100-80GB-HBM3-MIG-1g.10gb`, count 56 for 8 GPUs of 7).
The GPUs are that count over the instances each GPU holds, where an input states it:

1. the mig-parted config the node's `nvidia.com/mig.config` label names, where the snapshot holds
   it: entries for every GPU (`devices: all`) that give the node's model only that profile;
2. else, for a config named `all-<profile>` (the GPU Operator's default config, which fills each
   GPU with as many instances as fit), the most instances of the profile one GPU of the model
   holds (inventory.mig_profiles);
3. else unknown, saying why: a layout that is not read is never guessed (DESIGN §7).

Only where the count divides evenly, and only while MIG Manager does not report the layout
pending or failed (the devices GFD counted may still be the old layout's).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from inventory.mig_profiles import DEVICE_IDS, MODELS, model_key
from inventory.snapshot import ConfigMap
from inventory.sources.gpu_operator import DEFAULT_MIG_PARTED_CONFIGMAP
from inventory.sources.mig_parted import (
    ALL_DEVICES,
    MigPartedConfig,
    MigPartedEntry,
    mig_parted_from_configmap,
)
from inventory.sources.node_kinds import MIG_PRODUCT, physical_model
from inventory.sources.node_sharing import COUNT, MIG_CONFIG, PRODUCT, SHARED_SUFFIX
from inventory.sources.raw import as_int

MIG_STATE = "nvidia.com/mig.config.state"
# A30-24GB: the most instances of each profile one GPU holds, as mig-parted's config-default.yaml
# writes its all-<profile> configs (as many as fit), and its PCI id there. Not in MODELS: the
# partitioner has no placement facts for its 4-slot geometry, so it must not offer the A30.
_A30 = ("A30-24GB", {"1g.6gb": 4, "1g.6gb+me": 1, "2g.12gb": 2, "2g.12gb+me": 1, "4g.24gb": 1})
_A30_IDS = ("0x20B710DE",)
_A30_PRODUCT = re.compile(r"^(?:nvidia[-_ ])?a30(?:[-_ ]24gb|[-_ ]pcie)*$", re.IGNORECASE)


@dataclass(frozen=True)
class MigSources:
    """The mig-parted configs a snapshot holds, parsed once: (where, config), those of the
    ConfigMap MIG Manager reads first."""

    configs: tuple[tuple[str, MigPartedConfig], ...] = ()


def mig_sources(configmaps: Iterable[ConfigMap], reads: Iterable[str] = ()) -> MigSources:
    """The mig-parted configs of the `configmaps` kept (purpose mig_parted, with contents);
    those named in `reads` (the ClusterPolicies' `migManager.config.name`) first, then the GPU
    Operator's default ConfigMap, then the others."""
    first = set(reads) or {DEFAULT_MIG_PARTED_CONFIGMAP}
    kept = [c for c in configmaps if c.purpose == "mig_parted" and c.data]
    kept.sort(key=lambda c: (c.name not in first, c.namespace, c.name))
    return MigSources(
        tuple(
            (f"ConfigMap {c.namespace}/{c.name} key {key}", config)
            for c in kept
            for key, config in mig_parted_from_configmap({"data": dict(c.data)}).items()
        )
    )


def mig_single_gpus(labels: Mapping[str, str], sources: MigSources) -> tuple[int | None, str]:
    """(physical GPUs, how they were counted or why they are unknown) of a node whose GFD
    labels count MIG devices (node_kinds.mig_single_overrides)."""
    devices = as_int(labels.get(COUNT))
    product = labels.get(PRODUCT, "")
    model = physical_model(product)
    profile = product.partition(MIG_PRODUCT)[2].removesuffix(SHARED_SUFFIX)
    said = (
        f"label {COUNT}={labels.get(COUNT, '')} counts {profile} MIG devices, not GPUs "
        "(GPU Feature Discovery's MIG single strategy)"
    )
    unknown = f"{said}; the profile's instances per GPU are not known"
    if not devices:
        return None, f"label {COUNT}={labels.get(COUNT, '')!r} is not a count of MIG devices"
    name = labels.get(MIG_CONFIG, "").strip()
    if not name:
        return None, f"{unknown}: no {MIG_CONFIG} label names the node's layout"
    state = labels.get(MIG_STATE, "").strip()
    if state and state != "success":
        return None, (
            f"{unknown}: {MIG_STATE}={state}, so the layout {name} may not be in force yet"
        )
    table = _model_table(model)
    read = _from_config(name, profile, model, table, sources)
    if read is None:
        read = _from_table(name, profile, model, table)
    if isinstance(read, str):
        return None, f"{unknown}: {read}"
    per_gpu, how = read
    if devices % per_gpu:
        return None, (
            f"{unknown}: {how}, which {devices} does not divide (the devices counted may be "
            "of another layout)"
        )
    return devices // per_gpu, f"{said}; {how}: {devices} / {per_gpu} = {devices // per_gpu}"


def _model_table(model: str) -> tuple[str, Mapping[str, int], tuple[str, ...]] | None:
    """(model key, profile -> most instances on one GPU, PCI ids) of a MIG model we know."""
    key = model_key(model)
    if key is not None:
        most = {name: p.max_instances for name, p in MODELS[key].profiles.items()}
        return key, most, DEVICE_IDS.get(key, ())
    if _A30_PRODUCT.match(model.strip()):
        return _A30[0], _A30[1], _A30_IDS
    return None


def _from_config(
    name: str,
    profile: str,
    model: str,
    table: tuple[str, Mapping[str, int], tuple[str, ...]] | None,
    sources: MigSources,
) -> tuple[int, str] | str | None:
    """(instances per GPU, how) from the first held config named `name`; why not, where it
    does not give every GPU of the model the same count of `profile` alone; None if no config
    of that name is held."""
    held = next(((w, c) for w, c in sources.configs if name in c.configs), None)
    if held is None:
        return None
    where, config = held
    entries = config.configs[name]
    what = f"mig-parted config {name} ({where})"
    ids = table[2] if table else ()
    if not ids and any(e.device_filter for e in entries):
        return f"{what} has entries per GPU model, and the PCI ids of {model} GPUs are not known"
    kind = table[0] if table else model
    layouts: set[tuple[tuple[str, int], ...]] = set()
    for device_id in ids or ("",):
        applying = [e for e in entries if _applies(e, device_id)]
        if any(e.devices != ALL_DEVICES for e in applying):
            return f"{what} gives {kind} GPUs layouts by GPU index"
        if applying:
            layouts.add(_layout(applying[-1]))  # mig-parted applies each: the last one stays
    if not layouts:
        return f"{what} has no entry for {kind} GPUs: mig-parted leaves them as they are"
    if len(layouts) > 1:
        return f"{what} gives the PCI ids of {kind} GPUs different layouts"
    layout = layouts.pop()
    if [p for p, _ in layout] != [profile]:
        shown = ", ".join(f"{n} x {p}" for p, n in layout) or "no MIG device"
        return f"{what} gives each {kind} GPU {shown}, not {profile} alone"
    return layout[0][1], f"{what} gives each {kind} GPU {layout[0][1]} x {profile}"


def _applies(entry: MigPartedEntry, device_id: str) -> bool:
    """The entry applies to some GPU with this PCI id ("": any model, no filter matches)."""
    index = 0 if entry.devices == ALL_DEVICES else next(iter(entry.devices), None)
    return index is not None and entry.applies_to(device_id, index)


def _layout(entry: MigPartedEntry) -> tuple[tuple[str, int], ...]:
    if not entry.mig_enabled:
        return ()
    return tuple(sorted((p, n) for p, n in entry.mig_devices.items() if n > 0))


def _from_table(
    name: str,
    profile: str,
    model: str,
    table: tuple[str, Mapping[str, int], tuple[str, ...]] | None,
) -> tuple[int, str] | str:
    """(instances per GPU, how) where `name` is the GPU Operator's `all-<profile>` config
    (`+me` written `.me`); why not otherwise."""
    if name != "all-" + profile.replace("+me", ".me"):
        return (
            f"mig-parted config {name} is in no mig-parted ConfigMap the snapshot holds, so "
            f"how many {profile} instances it gives each GPU is not read"
        )
    if table is None:
        return f"{model!r} is not a MIG model whose profiles are known here"
    most = table[1].get(profile)
    if most is None:
        return f"{profile} is not a MIG profile of {table[0]} GPUs"
    return most, (
        f"{name} is in no mig-parted ConfigMap the snapshot holds; the GPU Operator's default "
        f"config of that name fills each GPU with the most {profile} instances one {table[0]} "
        f"GPU holds, {most}"
    )
