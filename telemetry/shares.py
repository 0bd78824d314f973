"""Which GPUs HAMi's shares hold, for the hijack check (ATTR-001). PURE.

A HAMi pod's `nvidia.com/gpu` counts vGPU shares, not GPUs: four pods with one share each may
all sit on one GPU. So shares are not counted as GPUs held: where HAMi names the devices it
allocated (`hami.io/vgpu-devices-allocated`) a busy GPU is held only if a share is bound to it;
where it does not, each share stands for one GPU it may be on (the most it can cover), and the
finding says the judgement was by count."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime

from inventory.fractions import HAMI_ALLOCATED, hami_devices, hami_share
from inventory.snapshot import Pod
from telemetry.hijack import Hijack
from telemetry.samples import GpuSample

GPU = "nvidia.com/gpu"


@dataclass(frozen=True)
class ShareHolds:
    # node -> (GPU UUID, until) of each device a HAMi share is bound to; until None: still held
    devices: dict[str, list[tuple[str, datetime | None]]] = field(default_factory=dict)
    # node -> HAMi shares whose devices no annotation names (each counted as one GPU)
    unknown: dict[str, int] = field(default_factory=dict)

    def held(self, sample: GpuSample) -> bool:
        """A share is bound to the sample's GPU at its time (a MIG instance's samples carry
        their parent's UUID; HAMi shares whole GPUs)."""
        return bool(sample.uuid) and any(
            uuid == sample.uuid and (until is None or sample.time <= until)
            for uuid, until in self.devices.get(sample.hostname, ())
        )


def share_units(pod: Pod) -> int:
    """The GPUs a HAMi pod is counted to hold by count: none where HAMi names its devices
    (judged by UUID), else one per share (`nvidia.com/gpu`, one where only HAMi's memory or
    core counters are asked: they ride on a share)."""
    if hami_devices(pod.annotations.get(HAMI_ALLOCATED, "")):
        return 0
    return max(1, pod.gpu_resources.get(GPU, 0))


def share_holds(running: Iterable[Pod], ended: Iterable[tuple[Pod, datetime]]) -> ShareHolds:
    """The HAMi shares of the running pods, and of the pods that ran to an end (held up to
    when the inventory saw them finished)."""
    holds = ShareHolds()
    pods = [(p, None) for p in running] + [(p, until) for p, until in ended]
    for pod, until in pods:
        if not pod.node_name or not hami_share(pod):
            continue
        uuids = hami_devices(pod.annotations.get(HAMI_ALLOCATED, ""))
        if uuids:
            holds.devices.setdefault(pod.node_name, []).extend((u, until) for u in uuids)
        elif until is None:
            holds.unknown[pod.node_name] = holds.unknown.get(pod.node_name, 0) + share_units(pod)
    return holds


def share_note(hijack: Hijack, holds: ShareHolds) -> Hijack:
    """The hijack, saying how HAMi's shares on its node were read."""
    parts = []
    bound = sorted({uuid for uuid, _ in holds.devices.get(hijack.hostname, ())})
    if bound:
        parts.append(
            f"HAMi's shares on this node are bound to {', '.join(bound)} "
            "(hami.io/vgpu-devices-allocated), none to this GPU"
        )
    if unknown := holds.unknown.get(hijack.hostname):
        parts.append(
            f"{unknown} HAMi share(s) whose devices no annotation names are counted as one GPU "
            "each (the most they can cover)"
        )
    if not parts:
        return hijack
    note = "; ".join([hijack.held_note, *parts] if hijack.held_note else parts)
    return replace(hijack, held_note=note)
