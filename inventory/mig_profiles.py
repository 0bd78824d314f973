"""MIG GPU-instance profiles per GPU model, and GPU product names -> our model keys.

Pure: a table in code, no file or network at runtime.

Public sources for the facts restated here (our own summary, not copied text):
- NVIDIA MIG User Guide, "Supported MIG Profiles" and "Supported GPUs"
  (docs.nvidia.com/datacenter/tesla/mig-user-guide/): profile names and instance counts.
- NVIDIA/mig-parted `deployments/systemd/config-default.yaml` @ bd7160f4: the `all-<profile>`
  counts per GPU family.
- `nvidia-smi mig -lgipp` output from A100-40GB, A100-80GB, H100-80GB and H100 NVL cards: the
  placement start slots and sizes on the 8-slot memory grid.
H200-141GB and B200 counts are published; their placements are assumed to follow the same 8-slot
geometry as the cards measured above (not yet checked against a real `-lgipp` capture). So are
GB200, GB300, B300 and H20's: their profile names come from mig-parted's config-default.yaml
(the all-balanced entry of each one's PCI id, and the all-<profile> configs of the same memory
sizes; GB300's 1g.35gb is its 7-per-GPU base profile, where H200's 1g.35gb is the 4-per-GPU
double-memory one). H800 and A800 (export parts) share the H100 and A100 entries of the same
memory. No A30 or RTX PRO 6000 Blackwell is listed: we have no placement facts for their 4-slot
geometry.

Compute-instance (CI) profiles inside a GPU instance, per GI compute size: NVIDIA/go-nvml
`pkg/nvml/mock/dgxa100` (ComputeInstanceProfiles: SliceCount and InstanceCount per GI profile),
which agrees with `nvidia-smi mig -lcip` on an A100: a 4g GI has no 3-slice CI, a 3g GI holds
at most one 2-slice CI. The same table is assumed for H100, H200 and B200 (same 7-slice design).
PCI device ids per model: the `device-filter` lists of mig-parted's config-default.yaml.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class MigProfile:
    """One GPU-instance profile: where it may start, and what it uses."""

    name: str
    placements: tuple[int, ...]  # allowed start slots on the memory grid
    size: int  # memory slices taken, from the start slot
    compute: int  # compute slices (the number before "g")
    max_instances: int  # most instances of this profile alone on one GPU


@dataclass(frozen=True, slots=True)
class GpuModel:
    """A MIG-capable GPU: its grid and its profiles by name."""

    key: str
    memory_slots: int
    compute_slices: int
    profiles: dict[str, MigProfile]


# The shared 8-slot geometry: kind -> (allowed starts, size, compute slices, max instances).
# "1g2x" is the 1g profile with twice the memory (1g.10gb on A100-40GB, 1g.20gb on 80GB parts).
_GEOMETRY_8: dict[str, tuple[tuple[int, ...], int, int, int]] = {
    "1g": ((0, 1, 2, 3, 4, 5, 6), 1, 1, 7),
    "1g+me": ((0, 1, 2, 3, 4, 5, 6), 1, 1, 1),  # takes all media engines, so only one
    "1g2x": ((0, 2, 4, 6), 2, 1, 4),
    "2g": ((0, 2, 4), 2, 2, 3),
    "3g": ((0, 4), 4, 3, 2),
    "4g": ((0,), 4, 4, 1),
    "7g": ((0,), 8, 7, 1),
}

# Model key -> the memory (GB) in each profile name, in _GEOMETRY_8 kind order.
_MEMORY_GB: dict[str, tuple[int, int, int, int, int, int]] = {
    #              1g 1g2x  2g   3g   4g   7g
    "A100-40GB": (5, 10, 10, 20, 20, 40),
    "A100-80GB": (10, 20, 20, 40, 40, 80),
    "H100-80GB": (10, 20, 20, 40, 40, 80),
    "H100-94GB": (12, 24, 24, 47, 47, 94),
    "H200-141GB": (18, 35, 35, 71, 71, 141),
    "B200": (23, 45, 45, 90, 90, 180),
    "GB200": (23, 47, 47, 93, 93, 186),
    "B300": (34, 67, 67, 135, 135, 269),
    "GB300": (35, 70, 70, 139, 139, 278),
    "H20-96GB": (12, 24, 24, 48, 48, 96),
}


def _profiles_8slot(gb: tuple[int, int, int, int, int, int]) -> dict[str, MigProfile]:
    one, one2x, two, three, four, seven = gb
    names = {
        "1g": f"1g.{one}gb",
        "1g+me": f"1g.{one}gb+me",
        "1g2x": f"1g.{one2x}gb",
        "2g": f"2g.{two}gb",
        "3g": f"3g.{three}gb",
        "4g": f"4g.{four}gb",
        "7g": f"7g.{seven}gb",
    }
    return {
        names[kind]: MigProfile(names[kind], starts, size, compute, most)
        for kind, (starts, size, compute, most) in _GEOMETRY_8.items()
    }


MODELS: dict[str, GpuModel] = {
    key: GpuModel(key=key, memory_slots=8, compute_slices=7, profiles=_profiles_8slot(gb))
    for key, gb in _MEMORY_GB.items()
}

_MEMORY_TOKEN = re.compile(r"^(\d+)gb$")
# family -> {memory GB named in the label (None: not named) -> model key}
_FAMILIES: dict[str, dict[int | None, str]] = {
    "a100": {40: "A100-40GB", 80: "A100-80GB"},
    "a800": {40: "A100-40GB", 80: "A100-80GB"},
    "h100": {None: "H100-80GB", 80: "H100-80GB", 94: "H100-94GB"},
    "h800": {None: "H100-80GB", 80: "H100-80GB", 94: "H100-94GB"},
    "h200": {None: "H200-141GB", 141: "H200-141GB"},
    "b200": {None: "B200", 180: "B200"},
    "gb200": {None: "GB200", 186: "GB200"},
    "b300": {None: "B300", 269: "B300"},
    "gb300": {None: "GB300", 278: "GB300"},
    "h20": {None: "H20-96GB", 96: "H20-96GB"},
}


def model_key(name: str) -> str | None:
    """Our model key for a GFD product label or short name; None when we do not know it.

    "NVIDIA-H100-80GB-HBM3" -> "H100-80GB", "NVIDIA-A100-SXM4-40GB" -> "A100-40GB",
    "NVIDIA-H100-NVL" -> "H100-94GB". The family must be a whole token, so "GB200" and "GH200"
    are not mistaken for B200 or H200. An A100 without its memory size is ambiguous: None.
    """
    tokens = [t for t in re.split(r"[-_\s]+", name.strip().lower()) if t]
    if tokens and tokens[0] == "nvidia":
        tokens = tokens[1:]
    if not tokens or tokens[0] not in _FAMILIES:
        return None
    family, rest = _FAMILIES[tokens[0]], tokens[1:]
    memory = [int(m.group(1)) for t in rest if (m := _MEMORY_TOKEN.match(t))]
    if len(memory) > 1:
        return None
    if "nvl" in rest and tokens[0] in ("h100", "h800"):
        return "H100-94GB" if memory in ([], [94]) else None
    return family.get(memory[0] if memory else None)


def profile_of(model: str, profile: str) -> MigProfile | None:
    """The profile of that name on that model key, or None."""
    gpu = MODELS.get(model)
    return gpu.profiles.get(profile) if gpu else None


# GI compute slices -> {CI compute slices -> most CIs of that size in one GI}. A GI is split into
# CIs whose slices add up to at most its own; a GI with no CI listed gets one CI of all of them.
CI_SLICES: dict[int, dict[int, int]] = {
    1: {1: 1},
    2: {1: 2, 2: 1},
    3: {1: 3, 2: 1, 3: 1},
    4: {1: 4, 2: 2, 4: 1},
    7: {1: 7, 2: 3, 3: 2, 4: 1, 7: 1},
}

# Model key -> PCI device ids (as mig-parted's device-filter writes them) of its products.
DEVICE_IDS: dict[str, tuple[str, ...]] = {
    "A100-40GB": ("0x20B010DE", "0x20B110DE", "0x20F110DE", "0x20F610DE"),
    "A100-80GB": ("0x20B210DE", "0x20B510DE", "0x20F310DE", "0x20F510DE"),
    "H100-80GB": ("0x233010DE", "0x233110DE", "0x232210DE", "0x232410DE"),
    "H100-94GB": ("0x232110DE", "0x233A10DE"),
    "H200-141GB": ("0x233510DE", "0x233B10DE"),
    "B200": ("0x290110DE",),
    "GB200": ("0x294110DE",),
    "B300": ("0x318210DE",),
    "GB300": ("0x31C210DE",),
    "H20-96GB": ("0x232910DE",),
}


def ci_profile_name(gi: MigProfile, slices: int) -> str:
    """NVIDIA's name of a CI of `slices` in GI `gi`: "1c.3g.40gb"; the whole GI is "3g.40gb"."""
    return gi.name if slices == gi.compute else f"{slices}c.{gi.name}"


def ci_profiles(gi: MigProfile) -> dict[int, int]:
    """CI sizes allowed in `gi` -> most CIs of that size in it."""
    return CI_SLICES.get(gi.compute, {gi.compute: 1})
