"""Whether HAMi shares a node's GPUs. PURE.

DESIGN §2: a fractional scheduler's limits are soft, so it counts as time-slicing. GFD says
nothing of HAMi (it runs its own device plugin), so a node it shares would otherwise read as
unshared while the checks judge its pods' holdings as time-sliced
(posture.rules.plugin_holdings). A node is taken as HAMi's where:
- HAMi's device plugin registered its GPUs (its `hami.io/node-nvidia-register` annotation),
  runs there, or a running pod holds HAMi shares (hami_share: its allocation annotation or
  `nvidia.com/gpumem` / `gpucores`).

Not KAI / Run:ai fractions: there a reservation pod holds a whole GPU and only its fractions
share it, while other pods' `nvidia.com/gpu` stay whole GPUs; the node is not time-sliced (its
fractions' holdings are, posture.rules.plugin_holdings). HAMi's device plugin instead serves
every `nvidia.com/gpu` of the node as a share."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from inventory.fractions import hami_share
from inventory.snapshot import Pod
from inventory.sources.images import other_device_plugin

# HAMi's device plugin writes each GPU it registers here: "<uuid>,<split count>,<memory>,
# <cores>,<type>,<numa>,<healthy>:" per device (a JSON list with a `count` in newer releases).
HAMI_REGISTER = ("hami.io/node-nvidia-register", "HAMi.sh/node-nvidia-register")


@dataclass(frozen=True)
class FractionalSharing:
    basis: str  # who shares the node's GPUs, and how we know
    replicas: int | None  # shares per GPU where known (HAMi's deviceSplitCount), else None


def fractional_sharing(
    annotations: Mapping[str, str], pods_on_node: Sequence[Pod]
) -> FractionalSharing | None:
    """How HAMi shares the node's GPUs, None where it is not seen to."""
    running = [p for p in pods_on_node if p.is_active]
    register = next((annotations[k] for k in HAMI_REGISTER if annotations.get(k)), "")
    hami_pods = [p for p in running if hami_share(p)]
    plugin = any(other_device_plugin(c.image) == "HAMi" for p in running for c in p.containers)
    if register or hami_pods or plugin:
        why = (
            "its device plugin registered the node's GPUs"
            if register
            else "its device plugin runs on the node"
            if plugin
            else f"{len(hami_pods)} running pod(s) hold HAMi shares"
        )
        split = split_count(register)
        per_gpu = f"{split} shares per GPU (deviceSplitCount)" if split else "shares unknown"
        return FractionalSharing(
            f"HAMi shares the GPUs under soft memory and core limits ({why}; {per_gpu})", split
        )
    return None


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
