"""What says a node with no GPU capacity may still hold GPUs. PURE.

A node without GPU capacity is known to have no GPU only when nothing in the snapshot says
otherwise: no GPU resource in its capacity or allocatable (even at 0: a device plugin that
registered and lost its devices), no GFD, GPU Operator, NFD (PCI vendor 10de) or cloud GPU label,
no GPU-stack pod on it (driver, toolkit, device plugin, DCGM, mig-manager, DRA plugin; the GPU
Operator's own controller, and any stack Deployment's pod such as the DRA driver's controller,
runs on any node and is no sign), no ResourceSlice publishing GPU
devices for it. Such a node has nothing to patch (its patch status is null); a node with a sign
stays "unknown", since its GPU stack cannot be judged from what the snapshot shows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from inventory.dra_devices import NVIDIA_DRIVER, DraIndex, device_kind
from inventory.snapshot import GPU_RESOURCE_PREFIX, Pod
from inventory.snapshot.accelerators import is_other_accelerator
from inventory.snapshot.pods import is_nic_resource
from inventory.sources.cloud_labels import cloud_gpu_model
from inventory.sources.images import container_component
from inventory.sources.node_kinds import GPU_LABELS
from inventory.sources.raw import mapping

NV = GPU_RESOURCE_PREFIX
# GFD's and the GPU Operator's label families (nvidia.com/gpu.product, nvidia.com/gpu.deploy.*,
# nvidia.com/cuda.driver-version.*, nvidia.com/mig.config): only nodes with NVIDIA GPUs carry them.
_GPU_LABEL_PREFIXES = (NV + "gpu", NV + "cuda.", NV + "mig.", NV + "vgpu")
# The operator's controller Deployment is scheduled on any node, often a control-plane one.
_NOT_A_SIGN = ("gpu_operator",)
# So is any stack Deployment's pod (the DRA driver's ComputeDomain controller, with the kubelet
# plugin's image): a node's own agents run as DaemonSets (or static or bare pods).
_SCHEDULED_ANYWHERE = frozenset({"ReplicaSet", "Deployment"})


def gpu_signs(
    labels: Mapping[str, str], status: Mapping[str, Any], pods_on_node: Sequence[Pod]
) -> tuple[str, ...]:
    """Why a node whose capacity shows no GPU may still hold one (`status`: the Node object's
    status); () when nothing says so."""
    signs = []
    for where in ("capacity", "allocatable"):
        values = mapping(status.get(where))
        names = sorted(str(k) for k in values if _gpu_resource(str(k)))
        if names:
            listed = ", ".join(f"{k}={values[k]}" for k in names)
            signs.append(f"its {where} lists {listed}")
    labelled = sorted(k for k in labels if k in GPU_LABELS or k.startswith(_GPU_LABEL_PREFIXES))
    if labelled:
        more = f" and {len(labelled) - 3} more" if len(labelled) > 3 else ""
        signs.append(f"GPU labels {', '.join(labelled[:3])}{more}")
    model, label = cloud_gpu_model(labels)
    if model:
        signs.append(f"cloud label {label}={labels.get(label or '', '')}")
    signs.extend(_stack_pods(pods_on_node))
    return tuple(signs)


def _gpu_resource(name: str) -> bool:
    """Any resource of NVIDIA's but the Network Operator's NICs, or another vendor's GPU."""
    return (name.startswith(NV) and not is_nic_resource(name)) or is_other_accelerator(name)


def _stack_pods(pods: Iterable[Pod]) -> list[str]:
    found = []
    for pod in sorted(pods, key=lambda p: (p.namespace, p.name)):
        if not pod.is_active or pod.owner_kind in _SCHEDULED_ANYWHERE:
            continue
        components = {
            c
            for container in pod.containers
            if (c := container_component(container.name, container.image, container.command))
            and c not in _NOT_A_SIGN
        }
        if components:
            found.append(f"pod {pod.namespace}/{pod.name} runs {', '.join(sorted(components))}")
    return found


def dra_accelerators(node_name: str, index: DraIndex | None) -> dict[str, int]:
    """Other vendors' DRA drivers -> the GPU devices (whole GPUs, partitions) their
    ResourceSlices publish for the node; NVIDIA's driver is not among them (its GPUs are the
    node's own: gpu_count, sharing_strategy)."""
    found: dict[str, int] = {}
    for s, d in index.devices.values() if index is not None else ():
        if (
            s.node_name == node_name
            and s.driver != NVIDIA_DRIVER
            and device_kind(s.driver, d.attributes, d.name)
        ):
            found[s.driver] = found.get(s.driver, 0) + 1
    return dict(sorted(found.items()))


def dra_signs(node_name: str, index: DraIndex | None) -> tuple[str, ...]:
    """The ResourceSlices that publish GPU or MIG devices of the node (any DRA driver)."""
    if index is None:
        return ()
    slices = sorted(
        {
            s.name
            for s, d in index.devices.values()
            if s.node_name == node_name and device_kind(s.driver, d.attributes, d.name)
        }
    )
    return (f"ResourceSlices {', '.join(slices)} publish GPU devices",) if slices else ()
