"""Pods' holds on a node's GPUs through the device plugin, HAMi and KAI Scheduler fractions
(DESIGN §2, "a GPU reaches a pod by any of"). PURE.

- A device-plugin resource (`nvidia.com/gpu`, `*.shared`, MIG profiles, any name the node's
  config advertises by `rename`): the node's SharedResource of that name gives its mode on the
  devices it covers; a resource the config leaves alone is a whole device or MIG instance; with
  no readable config, the node's sharing strategy (GFD's labels) decides.
- HAMi (`nvidia.com/gpumem`, `gpucores`, `gpumem-percentage`, or its allocation annotation):
  time-slicing on the `nvidia.com/gpu` it rides on, limits soft; the GPUs are the ones
  `hami.io/vgpu-devices-allocated` names.
- Volcano's vGPU device plugin (`volcano.sh/vgpu-number`, with `vgpu-memory` / `vgpu-cores`),
  Aliyun's gpushare / cGPU (`aliyun.com/gpu-mem`, `gpu-core.percentage`), Koordinator's GPU
  share (`koordinator.sh/gpu-core`, `gpu-memory-ratio`, `gpu-memory`, `gpu.shared`, `gpu`) and
  Tencent's qGPU (`tke.cloud.tencent.com/qgpu-core`, `qgpu-memory`): time-slicing on an NVIDIA
  GPU, limits soft or none, one holding per scheduler a pod asks. The GPUs are the ones the
  scheduler names (inventory.fractions.scheduler_devices), else any GPU of the node.
- Nebuly nos's MPS slices (`nvidia.com/gpu-<N>gb` on a node nos partitions by MPS): MPS
  clients of one GPU (inventory.sources.nebuly).
- KAI Scheduler / Run:ai fractions (`gpu-fraction`, `gpu-memory`): time-slicing on the GPU its
  reservation pod holds. The binder ties them by the `runai-gpu-group` label; the reservation
  pod (in `kai-resource-reservation`, `runai-reservation` before KAI v0.6) holds the real
  `nvidia.com/gpu` and names it in `run.ai/reserve_for_gpu_index` (a UUID despite the name). It
  is the GPU's placeholder, not a party that shares it.
- The GPU Operator's sandbox device plugin (KubeVirt VMs): a passthrough GPU
  (`nvidia.com/GH100_H100_SXM5_80GB`) is one VM's whole GPU; a vGPU type
  (`nvidia.com/NVIDIA_A10-12Q`) shares a physical GPU with other VMs' vGPUs by the host's
  vGPU scheduler (best effort unless known).
- A node whose MIG reconfiguration failed or is stuck: its layout is unknown, so holdings not
  replicated by a sharing config have mode "unknown" (SHARE-009 says so) rather than an
  isolation assumed from the requested layout.
"""

from __future__ import annotations

from collections.abc import Iterable

from inventory.fractions import (
    GPU_GROUP,
    HAMI_ALLOCATED,
    NO_GPU,
    PERCENT_OF_GPU,
    RESERVED_GPU,
    RUNAI_GPU_INDEX,
    gpu_groups,
    gpu_id,
    hami_devices,
    scheduler_devices,
    whole_gpus,
    whole_gpus_alone,
)
from inventory.mig_state import mig_layout_problem
from inventory.resource_modes import resource_mode, shared_entry
from inventory.snapshot import SHARE_SCHEDULERS, Node, Pod
from inventory.sources.nebuly import nos_mps_slice
from inventory.sources.node_kinds import vm_device_kind
from posture.inputs import PostureInputs, TenantInfo
from posture.rules.holding import GpuHolding
from tenants.policy import FRACTIONAL_RESOURCES, base_resource, is_mig_resource

GPU = "nvidia.com/gpu"
# Shares of an NVIDIA GPU other schedulers advertise (inventory.snapshot.SHARE_SCHEDULERS), each
# name that stands for a hold on a GPU: how the scheduler shares it, and per how much of a
# name one GPU is held. 1: the count is of shares or GPUs (Volcano's vGPU shares, each of one
# GPU; Koordinator's `gpu.shared` GPUs); 100: percent of one GPU (Koordinator's `gpu`,
# `gpu-core` and `gpu-memory-ratio`, qGPU's `qgpu-core`, cGPU's `gpu-core.percentage`);
# None: an amount of one GPU's memory (Aliyun's `gpu-mem` GiB, Koordinator's `gpu-memory`,
# qGPU's `qgpu-memory`).
_VOLCANO = "Volcano vGPU: a share of the GPU under soft memory and core limits"
_ALIYUN = "Aliyun gpushare / cGPU: a share of one GPU's memory, no hardware isolation"
_KOORD = "Koordinator GPU share: a share of one GPU, no memory or fault isolation"
_QGPU = "Tencent qGPU: a share of one GPU under kernel-enforced limits, no fault isolation"
SCHEDULER_SHARES: dict[str, tuple[str, int | None]] = {
    "volcano.sh/vgpu-number": (_VOLCANO, 1),
    "aliyun.com/gpu-mem": (_ALIYUN, None),
    "aliyun.com/gpu-core.percentage": (_ALIYUN, 100),
    "koordinator.sh/gpu.shared": (_KOORD, 1),
    "koordinator.sh/gpu": (_KOORD, 100),
    "koordinator.sh/gpu-core": (_KOORD, 100),
    "koordinator.sh/gpu-memory-ratio": (_KOORD, 100),
    "koordinator.sh/gpu-memory": (_KOORD, None),
    "tke.cloud.tencent.com/qgpu-core": (_QGPU, 100),
    "tke.cloud.tencent.com/qgpu-memory": (_QGPU, None),
}
FRACTION_DEVICES = "gpu-fraction-num-devices"


def plugin_holdings(inputs: PostureInputs, node: Node) -> list[GpuHolding]:
    """Every active pod's GPU devices on `node` from device-plugin resources and fractions."""
    pods = inputs.pods_by_node.get(node.name, ())
    reserved = reserved_gpus(inputs, pods)
    mig_problem = mig_layout_problem(node)
    why_unknown = (
        f"MIG layout unknown: nvidia.com/mig.config.state={mig_problem['state']} "
        f"({mig_problem['why']})"
        if mig_problem
        else ""
    )
    holdings: list[GpuHolding] = []
    alone = whole_gpus_alone(pods, node.container_gpus)
    for pod in pods:
        if is_reservation(inputs, pod):
            continue
        tenant = inputs.tenant_of_pod(pod)
        if pod.gpu_fraction and not pod.gpu_resources:
            holdings.append(_fraction_holding(pod, tenant, reserved))
        else:
            holdings += _resource_holdings(node, pod, tenant, why_unknown, alone)
    return holdings


def holds_device(node: Node, resource: str) -> bool:
    """A resource that stands for a GPU or MIG device on this node: NVIDIA's own names, and any
    name the node's device-plugin config advertises (not HAMi's memory or core counters)."""
    base = base_resource(resource)
    return (
        resource in SCHEDULER_SHARES
        or base == GPU
        or is_mig_resource(resource)
        or shared_entry(node, resource) is not None
        or vm_device_kind(resource) is not None
        or nos_mps_slice(node.labels, resource)
    )


def _resource_holdings(
    node: Node, pod: Pod, tenant: TenantInfo | None, why_unknown: str, whole_alone: bool
) -> list[GpuHolding]:
    resources = pod.gpu_resources
    hami = HAMI_ALLOCATED in pod.annotations
    # HAMi's limits are soft (memory and cores enforced in-process, if at all): time-slicing.
    soft = hami or any(name in FRACTIONAL_RESOURCES for name in resources)
    devices = (
        hami_devices(pod.annotations.get(HAMI_ALLOCATED, "")) if hami else scheduler_devices(pod)
    )
    holdings = _scheduler_holdings(pod, tenant, devices, whole_alone)
    for name, count in sorted(resources.items()):
        if name in SCHEDULER_SHARES or not holds_device(node, name):
            continue
        pool = base_resource(name)
        if soft:
            mode, basis = (
                "time_slicing",
                "HAMi: a share of the GPU under soft memory and core limits",
            )
        else:
            mode, basis = resource_mode(node, name, why_unknown)
            pool = GPU if nos_mps_slice(node.labels, name) else pool
        holdings.append(GpuHolding(pod, tenant, name, pool, count, mode, devices, basis))
    return holdings


def _scheduler_holdings(
    pod: Pod, tenant: TenantInfo | None, devices: tuple[str, ...] | None, whole_alone: bool
) -> list[GpuHolding]:
    """One time-slicing holding per sharing scheduler the pod asks (SCHEDULER_SHARES), of as
    many GPUs as its largest request spans: a pod asking Koordinator for `gpu-core` and
    `gpu-memory-ratio` holds one share of one GPU, not two. Whole GPUs asked of one
    (inventory.fractions.whole_gpus: `gpu-core: 100`) are held exclusive, unless the node's
    pods show them shared after all (inventory.fractions.whole_gpus_alone)."""
    holdings = []
    asked = pod.gpu_resources
    for basis, (name, count) in scheduler_shares(asked).items():
        scheduler = SHARE_SCHEDULERS[name]
        whole = whole_gpus(asked, scheduler) if whole_alone else None
        if whole is None:
            holdings.append(
                GpuHolding(pod, tenant, name, GPU, count, "time_slicing", devices, basis)
            )
            continue
        # 100% of a GPU: the scheduler counts it full, so no other pod's share lands on it.
        percents = ", ".join(f"{n}={asked[n]}" for n in sorted(asked) if n in PERCENT_OF_GPU)
        why = f"{scheduler}: {whole} whole GPU(s) held alone ({percents})"
        holdings.append(GpuHolding(pod, tenant, name, GPU, whole, "exclusive", devices, why))
    return holdings


def scheduler_shares(asked: dict[str, int]) -> dict[str, tuple[str, int]]:
    """Scheduler (its basis) -> (the first of its names asked, the GPUs its largest request
    spans), of the SCHEDULER_SHARES names in `asked`: `gpu-core: 50` is a share of one GPU,
    never 50 GPUs."""
    held: dict[str, tuple[str, int]] = {}
    for name, amount in sorted(asked.items()):
        if name not in SCHEDULER_SHARES or amount <= 0:
            continue
        basis, per_gpu = SCHEDULER_SHARES[name]
        gpus = -(-amount // per_gpu) if per_gpu else 1
        first, most = held.get(basis, (name, 0))
        held[basis] = (first, max(most, gpus))
    return held


def is_reservation(inputs: PostureInputs, pod: Pod) -> bool:
    """A KAI / Run:ai reservation pod (PostureInputs.is_reservation): a placeholder."""
    return inputs.is_reservation(pod)


def reserved_gpus(inputs: PostureInputs, pods: Iterable[Pod]) -> dict[str, str]:
    """GPU group -> the GPU its reservation pod holds, on one node."""
    return {
        group: gpu_id(gpu)
        for pod in pods
        if is_reservation(inputs, pod)
        and (group := pod.labels.get(GPU_GROUP))
        and (gpu := pod.annotations.get(RESERVED_GPU, "")).strip() not in NO_GPU
    }


def _fraction_holding(pod: Pod, tenant: TenantInfo | None, reserved: dict[str, str]) -> GpuHolding:
    request = pod.gpu_fraction
    groups = gpu_groups(pod.labels)
    if groups:
        devices: tuple[str, ...] | None = tuple(
            sorted({reserved.get(g) or f"kai-group:{g}" for g in groups})
        )
    elif pod.annotations.get(RUNAI_GPU_INDEX, "").strip():
        devices = (gpu_id(pod.annotations[RUNAI_GPU_INDEX]),)
    else:
        devices = None
    count = _positive(pod.annotations.get(FRACTION_DEVICES)) or max(1, len(groups))
    asked = ", ".join(f"{k}={v}" for k, v in request.items())
    basis = f"KAI Scheduler fraction ({asked}): no memory or fault isolation between sharers"
    return GpuHolding(pod, tenant, next(iter(request)), GPU, count, "time_slicing", devices, basis)


def _positive(value: str | None) -> int | None:
    try:
        number = int(str(value).strip())
    except ValueError:
        return None
    return number if number > 0 else None
