"""A sync's warnings about GPU quantities that are no whole count. PURE.

The API server refuses a fractional or negative extended resource and any text that is no
Quantity, so only a hand-edited snapshot file holds one. gpuposture still reads it, failing
closed (quantity.gpu_count: a pod asking `nvidia.com/gpu: 500m` or `lots` holds one GPU, so
the sharing checks still see it), but says so here: the count the checks use is not what was
written.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from inventory.snapshot import GPU_RESOURCE_PREFIX, Pod
from inventory.snapshot.accelerators import is_other_accelerator
from inventory.snapshot.quantity import count_problem, gpu_count
from inventory.sources.object_refs import object_ref, shown
from inventory.sources.raw import mapping

_POD_FIELDS = (
    ("requests", "gpu_requests"),
    ("limits", "gpu_limits"),
    ("requests", "accelerator_requests"),
    ("limits", "accelerator_limits"),
)


def pod_quantity_warnings(pods: Iterable[Pod]) -> list[str]:
    """One warning per GPU or accelerator request or limit of a pod's containers that is no
    whole count, naming the pod, the container, the value and the count taken instead."""
    warnings = []
    for pod in pods:
        where = object_ref("Pod", pod.namespace, pod.name)
        for container in pod.containers:
            for part, attribute in _POD_FIELDS:
                for resource, value in sorted(getattr(container, attribute).items()):
                    problem = count_problem(value)
                    if problem is None:
                        continue
                    count = gpu_count(value)
                    warnings.append(
                        f"{where} container {shown(container.name)} {part} {shown(resource)}="
                        f"{shown(value)}, which is {problem}: counted as holding {count}"
                    )
    return warnings


def node_quantity_warnings(name: str, status: Any) -> list[str]:
    """One warning per GPU resource in a Node's status.capacity or allocatable that is no
    whole count (node_fields.gpu_quantities: a fraction counts as the whole device, other
    values as no such capacity)."""
    warnings = []
    for where in ("capacity", "allocatable"):
        for resource, value in sorted(mapping(mapping(status).get(where)).items()):
            if not _device(str(resource)):
                continue
            problem = count_problem(value)
            if problem is None:
                continue
            taken = f"counted as {gpu_count(value)}" if problem == "a fraction" else "left out"
            warnings.append(
                f"{object_ref('Node', None, name)} {where} {shown(resource)}={shown(value)}, "
                f"which is {problem}: {taken}"
            )
    return warnings


def _device(resource: str) -> bool:
    """A resource a node's GPU counts are read from (node_fields.gpu_quantities,
    accelerators.accelerator_counts)."""
    return resource.startswith(GPU_RESOURCE_PREFIX) or is_other_accelerator(resource)
