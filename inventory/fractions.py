"""KAI Scheduler / Run:ai fractions and the reservation pods that hold their GPUs, and HAMi's
shares of a GPU. PURE.

A fraction pod asks for a share of one GPU by annotation (`gpu-fraction`, `gpu-memory`); KAI's
binder has a reservation pod (in `kai-resource-reservation`, `runai-reservation` before KAI
v0.6) hold the real `nvidia.com/gpu`, names that GPU in `run.ai/reserve_for_gpu_index` (a
UUID despite the name), and ties the fractions to it by the `runai-gpu-group` label. Posture
(posture.rules.plugin_holdings) and telemetry (who a GPU's reading belongs to: DCGM-Exporter
names the reservation pod, the kubelet's holder) both read them here.

HAMi: a pod's `nvidia.com/gpu` counts vGPU shares, each on one physical GPU (its memory and core
counters, `nvidia.com/gpumem` and the like, ride on a share); HAMi's scheduler names the GPUs it
allocated in `hami.io/vgpu-devices-allocated`.

Other GPU-sharing schedulers (inventory.snapshot.SHARE_SCHEDULERS) name a pod's GPUs too:
Volcano's vGPU in `volcano.sh/vgpu-ids-new` (HAMi's format: Volcano's is HAMi-core's fork),
Aliyun's gpushare extender the index of the GPU it chose in `ALIYUN_COM_GPU_MEM_IDX`, and
Koordinator the GPU minor numbers in `scheduling.koordinator.sh/device-allocated`
(scheduler_devices). Koordinator and qGPU also take whole GPUs under their own names
(whole_gpus): a share of 100% is the GPU held alone."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Collection, Iterable, Mapping

from inventory.snapshot import SHARE_SCHEDULERS, Pod
from inventory.snapshot.pod_annotations import (
    ALIYUN_GPU_INDEX,
    KOORD_ALLOCATED,
    VOLCANO_ALLOCATED,
)
from tenants.policy import FRACTIONAL_RESOURCES

RESERVATION_NAMESPACES = ("kai-resource-reservation", "runai-reservation")
GPU_GROUP = "runai-gpu-group"  # KAI: a single fraction; "runai-gpu-group/<group>" for several
RESERVED_GPU = "run.ai/reserve_for_gpu_index"
RUNAI_GPU_INDEX = "runai-gpu"  # Run:ai before KAI: the fraction's GPU index
NO_GPU = ("", "-1")  # a reservation still waiting for its GPU
UUID_PREFIXES = ("GPU-", "MIG-")
HAMI_ALLOCATED = "hami.io/vgpu-devices-allocated"
# Names that ask a percentage of one GPU where a multiple of 100 asks whole GPUs: Koordinator
# (`koordinator.sh/gpu: 100`, or `gpu-core` and `gpu-memory-ratio` both 100) and Tencent qGPU
# (`qgpu-core: 100`) then count those GPUs as full and place no other pod's share on them.
# Not cGPU's `gpu-core.percentage`: it rides on `aliyun.com/gpu-mem`, a share of memory.
PERCENT_OF_GPU = frozenset(
    {
        "koordinator.sh/gpu",
        "koordinator.sh/gpu-core",
        "koordinator.sh/gpu-memory-ratio",
        "tke.cloud.tencent.com/qgpu-core",
    }
)


def is_reservation_pod(pod: Pod, *, owned: bool, platform: Collection[str]) -> bool:
    """A KAI / Run:ai reservation pod: the platform's placeholder holding the GPU its
    fractions share, never a party. Only KAI's / Run:ai's own reservation namespace, or a
    platform namespace (KAI's is configurable), holds one, never a namespace a tenant owns
    (`owned`): the annotation and label are the pod's own, so elsewhere they would let any
    pod pass as the platform's with whole GPUs, unjudged."""
    if owned:
        return False
    reservation_ns = pod.namespace in RESERVATION_NAMESPACES
    if not reservation_ns and pod.namespace not in platform:
        return False
    if pod.gpu_fraction:
        return False
    return RESERVED_GPU in pod.annotations or (reservation_ns and GPU_GROUP in pod.labels)


def gpu_id(value: str) -> str:
    """A GPU as a scheduler names it: its UUID (KAI), else its index (Run:ai before KAI)."""
    value = value.strip()
    return value if value.startswith(UUID_PREFIXES) else f"gpu-index:{value}"


def gpu_groups(labels: dict[str, str]) -> list[str]:
    """The GPU groups a fraction pod is bound to (one per GPU it spans)."""
    groups = [labels[GPU_GROUP]] if labels.get(GPU_GROUP) else []
    groups += [v for k, v in labels.items() if k.startswith(GPU_GROUP + "/") and v]
    return sorted(set(groups))


def reserved_gpu(pod: Pod) -> str | None:
    """The GPU a reservation pod holds (gpu_id), None while it waits for one."""
    value = pod.annotations.get(RESERVED_GPU, "").strip()
    return None if value in NO_GPU else gpu_id(value)


def bound_to(fraction: Pod, reservation: Pod) -> bool:
    """Whether a fraction pod shares the GPU a reservation pod on its node holds: by the GPU
    group the binder labels both with, else (Run:ai before KAI) by the fraction's GPU index."""
    groups = gpu_groups(fraction.labels)
    if groups:
        return reservation.labels.get(GPU_GROUP, "") in groups
    index = fraction.annotations.get(RUNAI_GPU_INDEX, "").strip()
    return bool(index) and gpu_id(index) == reserved_gpu(reservation)


def hami_devices(value: str) -> tuple[str, ...] | None:
    """The GPU UUIDs in `hami.io/vgpu-devices-allocated` ("GPU-<uuid>,NVIDIA,3000,30:;":
    containers split by ";", their devices by ":", a device's fields by ",")."""
    uuids = {
        device.split(",")[0].strip()
        for container in value.split(";")
        for device in container.split(":")
        if device.split(",")[0].strip()
    }
    return tuple(sorted(uuids)) or None


def hami_share(pod: Pod) -> bool:
    """A pod holding HAMi shares of GPUs: HAMi allocated it devices, or it asks for HAMi's
    memory or core counters."""
    return HAMI_ALLOCATED in pod.annotations or any(
        name in FRACTIONAL_RESOURCES for name in pod.gpu_resources
    )


def whole_gpus(asked: Mapping[str, int], scheduler: str) -> int | None:
    """The whole GPUs a pod asks of a sharing scheduler (a SHARE_SCHEDULERS value), None where
    it asks a share: every name of that scheduler it asks is a PERCENT_OF_GPU one at the same
    multiple of 100. A memory amount (`gpu-memory`, `qgpu-memory`) or a count of shared GPUs
    (`gpu.shared`) beside it is a share, whatever the percentages say."""
    amounts = {
        name: amount
        for name, amount in asked.items()
        if SHARE_SCHEDULERS.get(name) == scheduler and amount > 0
    }
    if not amounts or not set(amounts) <= PERCENT_OF_GPU or len(set(amounts.values())) != 1:
        return None
    amount = next(iter(amounts.values()))
    return amount // 100 if amount % 100 == 0 else None


def scheduler_whole_gpus(pod: Pod) -> int | None:
    """The GPUs a pod holds whole through sharing schedulers (whole_gpus of each it asks),
    None where it holds any share: a share of one, a HAMi counter or HAMi's allocation."""
    asked = pod.gpu_resources
    schedulers = {SHARE_SCHEDULERS[name] for name in asked if name in SHARE_SCHEDULERS}
    hami = HAMI_ALLOCATED in pod.annotations or any(
        name in FRACTIONAL_RESOURCES and name not in SHARE_SCHEDULERS for name in asked
    )
    counts = [whole_gpus(asked, scheduler) for scheduler in schedulers]
    if not counts or hami or any(n is None for n in counts):
        return None
    return sum(n for n in counts if n is not None)


def whole_gpus_alone(pods: Iterable[Pod], gpu_count: int | None) -> bool:
    """Whether the whole GPUs the active pods of one node ask of sharing schedulers
    (whole_gpus) are held alone, as the schedulers' accounting says: with one GPU for any
    shares beside them they fit in the node's GPUs (where its count is known), and no GPU a
    scheduler names for one of them is named for another pod. Where not, the snapshot shows a
    GPU they share after all (a pod placed past the scheduler, by `nodeName`): shares."""
    whole, shares = 0, False
    named: Counter[str] = Counter()
    alone_on: set[str] = set()
    for pod in pods:
        asked = pod.gpu_resources
        schedulers = {SHARE_SCHEDULERS[name] for name in asked if name in SHARE_SCHEDULERS}
        counts = [whole_gpus(asked, scheduler) for scheduler in schedulers]
        whole += sum(n for n in counts if n is not None)
        shares = shares or any(n is None for n in counts)
        devices = scheduler_devices(pod) or ()
        named.update(devices)
        if any(n is not None for n in counts):
            alone_on.update(devices)
    if gpu_count is not None and whole + (1 if shares else 0) > gpu_count:
        return False
    return all(named[device] == 1 for device in alone_on)


def scheduler_devices(pod: Pod) -> tuple[str, ...] | None:
    """The GPUs a sharing scheduler other than HAMi names for the pod, None where none does
    (or its annotation cannot be read: then which GPU is not known, never a guessed one).
    Volcano's are UUIDs; Aliyun's an index ("gpu-index:N", as gpu_id names Run:ai's);
    Koordinator's minor numbers ("gpu-minor:N": a device minor is not an index)."""
    annotations = pod.annotations
    if annotations.get(VOLCANO_ALLOCATED, "").strip():
        return hami_devices(annotations[VOLCANO_ALLOCATED])
    if (index := annotations.get(ALIYUN_GPU_INDEX, "").strip()) and _indices(index):
        return tuple(sorted({gpu_id(i) for i in _indices(index)}))
    if annotations.get(KOORD_ALLOCATED, "").strip():
        return koord_minors(annotations[KOORD_ALLOCATED])
    return None


def _indices(value: str) -> list[str]:
    """GPU indices, comma-separated; none where one is not a whole number."""
    parts = [p.strip() for p in value.split(",")]
    return parts if all(p.isdigit() for p in parts) else []


def koord_minors(value: str) -> tuple[str, ...] | None:
    """The GPUs of Koordinator's `device-allocated` annotation as "gpu-minor:N"; None where
    it is no such JSON or a GPU entry has no whole minor."""
    try:
        allocated = json.loads(value)
    except ValueError:
        return None
    gpus = allocated.get("gpu") if isinstance(allocated, dict) else None
    if not isinstance(gpus, list) or not gpus:
        return None
    minors = [g.get("minor") if isinstance(g, dict) else None for g in gpus]
    if not all(isinstance(m, int) and not isinstance(m, bool) and m >= 0 for m in minors):
        return None
    return tuple(sorted({f"gpu-minor:{m}" for m in minors}))
