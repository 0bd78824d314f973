"""The pod annotations a snapshot keeps: GPU scheduling facts, and what a mesh's or OpenKruise's
injector wrote on the pod. Nothing else a pod carries is kept (inventory.sources.pods)."""

from __future__ import annotations

# The annotations those schedulers name a pod's GPUs in: Volcano's vGPU device ids (HAMi's
# format, "GPU-<uuid>,NVIDIA,<mem>,<cores>:;"), the index of the GPU Aliyun's gpushare
# extender chose, and Koordinator's allocation (JSON, {"gpu": [{"minor": N, ...}]}).
VOLCANO_ALLOCATED = "volcano.sh/vgpu-ids-new"
ALIYUN_GPU_INDEX = "ALIYUN_COM_GPU_MEM_IDX"
KOORD_ALLOCATED = "scheduling.koordinator.sh/device-allocated"
# KAI Scheduler (and Run:ai before it): a pod asks for a share of one GPU by annotation.
FRACTION_ANNOTATIONS = ("gpu-fraction", "gpu-memory")
# The pod annotations kept (GPU scheduling facts, never anything else a pod carries): KAI's
# fraction request, how many GPUs it spans and the container it is for, the GPU a reservation pod
# holds (its UUID despite the name), Run:ai's older GPU index of a fraction pod, HAMi's devices
# allocated, and the GPUs Volcano vGPU, Aliyun's gpushare and Koordinator name for a pod.
FRACTION_CONTAINER_ANNOTATION = "gpu-fraction-container-name"
GPU_ANNOTATIONS = frozenset(
    {
        *FRACTION_ANNOTATIONS,
        "gpu-fraction-num-devices",
        FRACTION_CONTAINER_ANNOTATION,
        "run.ai/reserve_for_gpu_index",
        "runai-gpu",
        "hami.io/vgpu-devices-allocated",
        VOLCANO_ALLOCATED,
        ALIYUN_GPU_INDEX,
        KOORD_ALLOCATED,
    }
)
# Istio's per-pod traffic capture annotations, also kept: they let a pod's traffic to some
# addresses or ports skip its sidecar, and so skip a mesh-wide REGISTRY_ONLY (K8S-007).
MESH_ANNOTATIONS = frozenset(
    {
        "traffic.sidecar.istio.io/excludeOutboundIPRanges",
        "traffic.sidecar.istio.io/excludeOutboundPorts",
        "traffic.sidecar.istio.io/includeOutboundIPRanges",
        # What a mesh's injector wrote: Istio's lists the containers it injected, Linkerd's
        # says its proxy was (POD-007 tells the injector's sidecar from the workload's own).
        "sidecar.istio.io/status",
        "linkerd.io/proxy-version",
    }
)
# What OpenKruise's SidecarSet webhook writes on each pod it injects: per SidecarSet, the
# containers it added (`sidecarList`, JSON keyed by SidecarSet name) and the SidecarSets'
# names. The pod-hardening checks file what a SidecarSet added at the SidecarSet
# (posture.rules.pod.injectors), not at the workload, whose template holds none of it.
KRUISE_SIDECARSET_HASH = "kruise.io/sidecarset-hash"
KRUISE_SIDECARSET_LIST = "kruise.io/sidecarset-injected-list"
INJECTOR_ANNOTATIONS = frozenset({KRUISE_SIDECARSET_HASH, KRUISE_SIDECARSET_LIST})
