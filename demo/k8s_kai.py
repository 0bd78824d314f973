"""Builders for what KAI Scheduler adds to the demo world: the fraction pods' binder-written
fields and ConfigMaps, and the reservation pods holding the GPUs they share.

Spelled as KAI's binder writes them (pkg/binder: the `runai-gpu-group` label, the
`gpu-fraction` annotation, NVIDIA_VISIBLE_DEVICES from a `<prefix>-shared-gpu-0` ConfigMap, the
reservation pod's `run.ai/reserve_for_gpu_index`). Pure Python: no Django, no network.
"""

from __future__ import annotations

from demo import k8s_objects as k8s
from demo.cluster_parts import GPU, Work
from demo.k8s_base import Ids, Obj
from demo.telemetry import uuid_of

KAI_RESERVATION_NS = "kai-resource-reservation"  # KAI Scheduler's (runai-reservation before v0.6)
KAI_RESERVATION = "ghcr.io/nvidia/kai-scheduler/resource-reservation:v0.9.3"


def kai_fraction(ids: Ids, pod: Obj, w: Work, gpu_uuid: str) -> list[Obj]:
    """What KAI Scheduler's binder writes on a fraction pod it bound (annotations, the GPU group
    label, NVIDIA_VISIBLE_DEVICES from a ConfigMap), and the ConfigMaps it fills."""
    prefix = f"{pod['metadata']['name']}-{ids.suffix(7)}-shared-gpu"
    pod["metadata"]["annotations"] = {
        "gpu-fraction": w.fraction,
        "received-resource-type": "Fraction",
        "runai/shared-gpu-configmap": prefix,
    }
    pod["metadata"]["labels"].update({"kai.scheduler/queue": w.ns, "runai-gpu-group": w.gpu_group})
    pod["spec"]["schedulerName"] = "kai-scheduler"
    main = pod["spec"]["containers"][0]
    main["env"] = [
        *main.get("env", []),
        *(
            {"name": var, "valueFrom": {"configMapKeyRef": {"key": key, "name": f"{prefix}-0"}}}
            for var, key in (
                ("NVIDIA_VISIBLE_DEVICES", "RUNAI-VISIBLE-DEVICES"),
                ("RUNAI_NUM_OF_GPUS", "RUNAI_NUM_OF_GPUS"),
            )
        ),
    ]
    main["envFrom"] = [{"configMapRef": {"name": f"{prefix}-0-evar", "optional": False}}]
    data = {"RUNAI-VISIBLE-DEVICES": gpu_uuid, "RUNAI_NUM_OF_GPUS": str(w.fraction)}
    return [
        k8s.configmap(ids, f"{prefix}-0", w.ns, data),
        k8s.configmap(ids, f"{prefix}-0-evar", w.ns, {"GPU_PORTION": str(w.fraction)}),
    ]


def kai_reservations(ids: Ids, reservations: tuple[tuple[str, str, int], ...]) -> list[Obj]:
    """KAI Scheduler's reservation pods, (node, GPU group, GPU index) each: each holds the whole
    GPU its fractions share, and names it (a UUID, despite the annotation's name). Their
    namespace is labelled as the platform's, as a cluster running KAI should."""
    if not reservations:
        return []
    items = [k8s.namespace(ids, KAI_RESERVATION_NS, {"gpuposture.io/platform": "true"})]
    for node_name, group, index in reservations:
        ctr = k8s.container(
            "resource-reservation", KAI_RESERVATION, gpus={GPU: 1}, cpu="1m", memory="10Mi"
        )
        pod = k8s.pod(
            ids,
            f"gpu-reservation-{node_name}-{ids.suffix()}",
            KAI_RESERVATION_NS,
            node=node_name,
            containers=[ctr],
            service_account="kai-resource-reservation",
            labels={"app": "kai-resource-reservation", "runai-gpu-group": group},
        )
        pod["metadata"]["annotations"] = {
            "karpenter.sh/do-not-disrupt": "true",
            "run.ai/reserve_for_gpu_index": uuid_of(node_name, index),
        }
        items.append(pod)
    return items
