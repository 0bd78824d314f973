"""Whether HAMi, or another GPU-sharing scheduler, shares a node's GPUs. PURE.

DESIGN §2: a fractional scheduler's limits are soft, so it counts as time-slicing. GFD says
nothing of HAMi (it runs its own device plugin), so a node it shares would otherwise read as
unshared while the checks judge its pods' holdings as time-sliced
(posture.rules.plugin_holdings). A node is taken as HAMi's where:
- HAMi's device plugin registered its GPUs (its `hami.io/node-nvidia-register` annotation),
  runs there, or a running pod holds HAMi shares (hami_share: its allocation annotation or
  `nvidia.com/gpumem` / `gpucores`).
- Volcano's vGPU device plugin registered its GPUs (`volcano.sh/node-vgpu-register`, HAMi's
  format), or a running pod holds a share of another sharing scheduler's
  (inventory.snapshot.SHARE_SCHEDULERS: Volcano vGPU, Aliyun gpushare / cGPU, Koordinator's
  GPU share, Tencent qGPU). None isolates memory or faults in hardware: time-slicing too.

Not KAI / Run:ai fractions: there a reservation pod holds a whole GPU and only its fractions
share it, while other pods' `nvidia.com/gpu` stay whole GPUs; the node is not time-sliced (its
fractions' holdings are, posture.rules.plugin_holdings). HAMi's device plugin instead serves
every `nvidia.com/gpu` of the node as a share."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from inventory.fractions import hami_share, whole_gpus, whole_gpus_alone
from inventory.snapshot import SHARE_SCHEDULERS, Pod
from inventory.sources.images import other_device_plugin

# HAMi's device plugin writes each GPU it registers here: "<uuid>,<split count>,<memory>,
# <cores>,<type>,<numa>,<healthy>:" per device (a JSON list with a `count` in newer releases).
HAMI_REGISTER = ("hami.io/node-nvidia-register", "HAMi.sh/node-nvidia-register")
# Volcano's vGPU device plugin (HAMi-core's fork) writes its GPUs in the same format.
REGISTERS = {
    **dict.fromkeys(HAMI_REGISTER, "HAMi"),
    "volcano.sh/node-vgpu-register": "Volcano vGPU",
}


@dataclass(frozen=True)
class FractionalSharing:
    basis: str  # who shares the node's GPUs, and how we know
    replicas: int | None  # shares per GPU where known (HAMi's deviceSplitCount), else None


def fractional_sharing(
    annotations: Mapping[str, str], pods_on_node: Sequence[Pod], gpu_count: int | None = None
) -> FractionalSharing | None:
    """How HAMi (or another sharing scheduler) shares the node's GPUs, None where none is
    seen to."""
    running = [p for p in pods_on_node if p.is_active]
    alone = whole_gpus_alone(running, gpu_count)
    key = next((k for k in REGISTERS if annotations.get(k)), "")
    register = annotations.get(key, "") if key else ""
    share_pods = [found for p in running if (found := _schedulers(p, alone))]
    plugin = any(other_device_plugin(c.image) == "HAMi" for p in running for c in p.containers)
    if register or share_pods or plugin:
        who = " and ".join(
            sorted(
                {REGISTERS[key]}
                if register
                else {s for found in share_pods for s in found} or {"HAMi"}
            )
        )
        why = (
            "its device plugin registered the node's GPUs"
            if register
            else "its device plugin runs on the node"
            if plugin
            else f"{len(share_pods)} running pod(s) hold {who} shares"
        )
        split = split_count(register)
        per_gpu = f"{split} shares per GPU (deviceSplitCount)" if split else "shares unknown"
        how = (
            "shares the GPUs under soft memory and core limits"
            if who == "HAMi"
            else f"{'share' if ' and ' in who else 'shares'} the GPUs with no memory or fault "
            "isolation in hardware"
        )
        return FractionalSharing(f"{who} {how} ({why}; {per_gpu})", split)
    return None


def scheduler_sharing(
    strategy: str,
    label_declared: bool,
    annotations: Mapping[str, str],
    pods_on_node: Sequence[Pod],
    gpu_count: int | None = None,
) -> FractionalSharing | None:
    """A sharing scheduler's sharing of a node read as `strategy` so far: where GFD calls it
    unshared it becomes time-slicing; where no GFD label said anything and time-slicing was
    only inferred (more `nvidia.com/gpu` than GPUs: HAMi's plugin serves each share as one),
    the scheduler is why, and the basis says so. None otherwise."""
    if strategy == "none" or (strategy == "time_slicing" and not label_declared):
        return fractional_sharing(annotations, pods_on_node, gpu_count)
    return None


def _schedulers(pod: Pod, whole_alone: bool) -> set[str]:
    """The sharing schedulers whose shares the pod holds (HAMi's: hami_share); whole GPUs
    asked of one (whole_gpus) are not shares where they are held alone (whole_gpus_alone)."""
    asked = pod.gpu_resources
    named = {SHARE_SCHEDULERS[name] for name in asked if name in SHARE_SCHEDULERS}
    found = {s for s in named if not whole_alone or whole_gpus(asked, s) is None}
    if hami_share(pod) and not named:
        found.add("HAMi")
    return found


def split_count(register: str) -> int | None:
    """HAMi's shares per GPU from its register annotation, where every GPU says the same."""
    counts: set[int] = set()
    value = register.strip()
    if value.startswith("["):
        try:
            devices = json.loads(value)
        except ValueError:
            return None
        for device in devices if isinstance(devices, list) else ():
            count = device.get("count") if isinstance(device, dict) else None
            if not isinstance(count, int) or isinstance(count, bool):
                return None
            counts.add(count)
    else:
        for device in filter(None, (d.strip() for d in value.split(":"))):
            fields = device.split(",")
            if len(fields) < 2 or not fields[1].strip().isdigit():
                return None
            counts.add(int(fields[1]))
    return counts.pop() if len(counts) == 1 and min(counts) > 0 else None
