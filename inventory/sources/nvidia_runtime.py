"""A node whose pods run under NVIDIA's container runtime by RuntimeClass. PURE.

k3s finds the NVIDIA Container Runtime on a host and creates the RuntimeClasses `nvidia` and
`nvidia-experimental` (handlers of the same names); the GPU Operator creates `nvidia`, and
`nvidia-cdi` / `nvidia-legacy` where CDI is on. NVIDIA's and k3s's documented way to give a GPU
to pods on a node with that runtime but no device plugin (a Jetson, a box with a host-installed
toolkit) is a pod with `runtimeClassName: nvidia` and `NVIDIA_VISIBLE_DEVICES=all`: the node then
advertises no `nvidia.com/gpu` and carries no GPU label, yet its pods reach its GPUs.

A Running pod whose RuntimeClass handler is one of NVIDIA's proves the node has that runtime
(containerd refuses to start a pod whose handler it does not know), so the node is a GPU node
whose model, count and stack versions are unknown. Nothing else proves it: a pod naming the
class that is Pending or not scheduled never reached a runtime, and another handler (runc,
kata, gVisor's runsc) says nothing of GPUs. The handler is the RuntimeClass object's where the
snapshot holds it; else the class's own name stands for it (k3s and the GPU Operator name
their classes after their handlers), and the evidence says which.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from inventory.snapshot import Pod
from inventory.sources.raw import name_of, text

NVIDIA_HANDLERS = ("nvidia", "nvidia-cdi", "nvidia-legacy", "nvidia-experimental")
# Kata Containers' handlers (kata-deploy: kata, kata-qemu, kata-clh, kata-qemu-nvidia-gpu,
# -snp, -tdx, ...): containerd-shim-kata-v2 runs the pod in a guest VM.
VM_HANDLER_PREFIX = "kata"
RUNTIME_CLASS_GROUP = "node.k8s.io/"


def is_runtime_class(kind: str, obj: Mapping[str, Any]) -> bool:
    """A built-in RuntimeClass (node.k8s.io), not a custom kind of the same name."""
    api = text(obj.get("apiVersion"), "") or ""
    return kind == "RuntimeClass" and api.startswith(RUNTIME_CLASS_GROUP)


def runtime_class_handler(obj: Mapping[str, Any]) -> tuple[str, str]:
    """(class name, handler) of a RuntimeClass object; the handler "" where it names none."""
    return name_of(dict(obj)), (text(obj.get("handler"), "") or "").strip()


def with_runtime_handler(pod: Pod, handlers: Mapping[str, str]) -> Pod:
    """The pod with the handler of its RuntimeClass as the snapshot's RuntimeClasses give it
    (`handlers`: class name -> handler); unchanged where it names no class, or one not read."""
    handler = handlers.get(pod.runtime_class or "")
    return replace(pod, runtime_handler=handler) if handler is not None else pod


def nvidia_runtime_pods(pods_on_node: Iterable[Pod]) -> tuple[str, ...]:
    """What shows the node runs NVIDIA's container runtime: each Running pod on it whose
    RuntimeClass handler is NVIDIA's, named with its class and where the handler was read."""
    shown = []
    for pod in sorted(pods_on_node, key=lambda p: (p.namespace, p.name)):
        if pod.phase != "Running" or not pod.node_name or not pod.runtime_class:
            continue  # never started under a runtime: it proves nothing of the node
        handler, read = _handler(pod)
        if handler in NVIDIA_HANDLERS:
            shown.append(
                f"pod {pod.namespace}/{pod.name} runs with RuntimeClass {pod.runtime_class} "
                f"({read})"
            )
    return tuple(shown)


def vm_runtime(pod: Pod) -> str | None:
    """Why the pod's containers run in a guest VM of their own (its RuntimeClass handler is a
    Kata one), None where they do not or it is not known. NVIDIA's container toolkit acts only
    for the containerd handler it is installed as (`nvidia`, or the default runtime), so it
    never sees such a pod's NVIDIA_VISIBLE_DEVICES: a GPU reaches the VM only by VFIO
    passthrough of a resource the pod requests, and the variable, read by the guest's own
    toolkit, names no GPU of the host. gVisor's runsc is no VM: its nvproxy is not judged
    here."""
    if not pod.runtime_class:
        return None
    handler, read = _handler(pod)
    if not handler.lower().startswith(VM_HANDLER_PREFIX):
        return None
    return (
        f"RuntimeClass {pod.runtime_class} ({read}) runs the pod in a Kata guest VM: NVIDIA's "
        "container toolkit on the host does not act for it, and only GPUs the pod requests are "
        "passed through to the VM"
    )


def runtime_count_basis(shown: tuple[str, ...]) -> str:
    """Why such a node's GPU count (and model) is unknown, naming what shows its GPUs."""
    more = f" and {len(shown) - 2} more" if len(shown) > 2 else ""
    return (
        "unknown: no device plugin advertises the node's GPUs and no GPU Feature Discovery "
        "label counts them, but NVIDIA's container runtime runs pods here, so it has NVIDIA "
        f"GPUs: {'; '.join(shown[:2])}{more}"
    )


def _handler(pod: Pod) -> tuple[str, str]:
    if pod.runtime_handler is not None:
        return pod.runtime_handler, f"handler {pod.runtime_handler or '(none)'}"
    name = pod.runtime_class or ""
    return name, "its RuntimeClass object is not in the snapshot: the class name is read"
