"""Whether a namespace holds the GPU stack and nothing else. PURE.

A binding vouches for a GPU-stack namespace (a ClusterRoleBinding naming one of its service
accounts: only a cluster admin writes one). Where none does, because the snapshot read no
ClusterRoleBinding (most `kubectl get` exports hold no RBAC) or none names the namespace,
only images place it (stack_namespaces.find_stack_namespaces), and anyone who may create a pod
may run NVIDIA's public images. An image then places a namespace among the platform's only
where the namespace holds the GPU stack and nothing else (DESIGN §3: "nothing unknown is
ever judged as platform"):

- every workload in it is a DaemonSet or a Deployment every image of which is the stack's
  (STACK_IMAGES), and none runs the device plugin as a Deployment (every chart runs it as a
  DaemonSet, one per node: a Deployment of it is someone's experiment, not the stack);
- no template and no pod in it reaches a GPU as a consumer (a GPU or other accelerator
  resource, a DRA claim, a KAI / Run:ai fraction). The stack's own pods hold none, but for two
  that are the stack's by construction: the GPU Operator's validation pods (owned by its
  ClusterPolicy, running its validator image, beside the operator's Deployment) ask for one GPU
  to prove the plugin works, and the DRA driver's ComputeDomain daemons (DaemonSets of the
  driver's image) claim their IMEX daemon device;
- every pod in it belongs to one of those workloads: no Job, CronJob, StatefulSet or bare pod.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from inventory.owners import OwnerIndex, workload_of
from inventory.snapshot import Pod, Workload
from inventory.sources.images import component_of, image_version, other_vendor
from inventory.sources.object_refs import object_ref
from inventory.sources.stack_operators import (
    KUBEVIRT_OPERANDS,
    KUBEVIRT_OPERATORS,
    NETWORK_OPERANDS,
    NETWORK_OPERATOR_IMAGE,
    deployment_named,
    is_network_operand,
    kubevirt_component,
    repository_name,
)
from inventory.sources.vendor_stacks import vendor_role

# The GPU stack's images images.COMPONENTS does not version, by the last segment of their
# repository (NVIDIA's, or a mirror's): the GPU Operator's other operands (validator, driver
# manager, DCGM host engine, GPU Feature Discovery, the sandbox and vGPU device managers, the
# Kata and CC managers, the GPUDirect RDMA and Storage drivers), Node Feature Discovery (the
# operator's chart deploys it in the operator's namespace), and the standalone agents
# (stack_namespaces.STANDALONE_IMAGES).
OPERAND_IMAGES = frozenset(
    {
        "gpu-operator-validator",
        "k8s-driver-manager",
        "dcgm",
        "gpu-feature-discovery",
        "vgpu-device-manager",
        "kubevirt-gpu-device-plugin",
        "k8s-kata-manager",
        "k8s-cc-manager",
        "gdrdrv",
        "nvidia-fs",
        "node-feature-discovery",
    }
)
STACK_IMAGES = OPERAND_IMAGES | NETWORK_OPERANDS | {NETWORK_OPERATOR_IMAGE}
# AMD's GPU Operator's operands beside its namesakes of NVIDIA's (images.namesake: the operator
# and the device plugin, whose image also runs the node labeller): its metrics exporter and the
# utility image its operator runs, from another vendor's repository only (vendor_stacks).
OTHER_VENDOR_OPERANDS = frozenset({"device-metrics-exporter", "gpu-operator-utils"})
VALIDATOR_IMAGE = "gpu-operator-validator"
# The GPU Operator's VFIO manager (vm-passthrough nodes) runs NVIDIA's CUDA base image, which
# is every tenant's too: the stack's only as a DaemonSet and from NVIDIA's registry.
CUDA_BASE = "nvcr.io/nvidia/cuda"
CONTROLLERS = ("DaemonSet", "Deployment")


def foreign_contents(
    namespace: str, workloads: Sequence[Workload], pods: Iterable[Pod]
) -> list[str]:
    """What `namespace` holds beside the GPU stack, each as a warning can say it; empty when
    it holds the stack and nothing else (see the module docstring)."""
    mine = [w for w in workloads if w.namespace == namespace]
    # Each named with its namespace (object_refs): a viewer's redaction hides another party's.
    found = [
        f"{object_ref(w.kind, namespace, w.name)} ({why})"
        for w in mine
        if (why := _workload_foreign(w))
    ]
    stack = {(w.kind, w.name): w for w in mine if not _workload_foreign(w)}
    operator_here = any(w.kind == "Deployment" and _runs(w, "gpu_operator") for w in stack.values())
    for pod in pods:
        if pod.namespace == namespace and (why := _pod_foreign(pod, stack, operator_here)):
            found.append(f"{object_ref('pod', namespace, pod.name)} ({why})")
    return found


def is_stack_image(image: str, kind: str) -> bool:
    """An image of the GPU stack, run by a controller of `kind`."""
    name = repository_name(image)
    if name is None:
        return False
    if component_of(image) or name in STACK_IMAGES or is_network_operand(image):
        return True
    if other_vendor(image) and (vendor_role(image) or name in OTHER_VENDOR_OPERANDS):
        return True
    if kubevirt_component(image) in KUBEVIRT_OPERATORS | KUBEVIRT_OPERANDS:
        return True
    return kind == "DaemonSet" and image_version(image)[0] == CUDA_BASE


def _workload_foreign(workload: Workload) -> str:
    if workload.kind not in CONTROLLERS:
        return f"a {workload.kind}, which the GPU stack does not run"
    other = sorted(i for i in workload.images.values() if not is_stack_image(i, workload.kind))
    if other:
        return f"runs {', '.join(other)}, not the GPU stack's"
    if workload.kind == "Deployment" and _runs(workload, "device_plugin"):
        return "runs the device plugin as a Deployment; its charts run it as a DaemonSet"
    template = workload.template
    if template is not None and _consumes(template) and not _dra_daemon(workload, template):
        return "its pods ask for a GPU"
    return ""


def _pod_foreign(pod: Pod, stack: dict[tuple[str, str], Workload], operator_here: bool) -> str:
    workload = _controller(pod, stack)
    if workload is None:
        if _validation_pod(pod) and operator_here:
            return ""
        ref = workload_of(pod, OwnerIndex(()))
        if ref.kind == "Pod":
            return "a bare pod"
        return f"of {object_ref(ref.kind, pod.namespace, ref.name)}"
    # A pod runs its template's images, unless something else made it (a ReplicaSet of its
    # own, named like the Deployment's): what it runs is judged, not whose it says it is.
    images = {c.image for c in pod.containers if not c.ephemeral}
    other = sorted(i for i in images if not is_stack_image(i, workload.kind))
    if other:
        return f"runs {', '.join(other)}, not the GPU stack's"
    if _consumes(pod) and not _dra_daemon(workload, pod):
        return "asks for a GPU"
    return ""


def _controller(pod: Pod, stack: dict[tuple[str, str], Workload]) -> Workload | None:
    """The stack workload `pod` belongs to, by the controllers' own naming (inventory.owners):
    only a DaemonSet's or a Deployment's pod can be the stack's. A ReplicaSet the pod's labels
    do not tie to its Deployment (a snapshot's own making, no pod-template-hash) is the
    Deployment's it is named after (`<deployment>-<hash>`): its pod is then held to the same
    images, and what it runs is judged (_pod_foreign), not whose it says it is."""
    ref = workload_of(pod, OwnerIndex(()))
    if ref.kind == "ReplicaSet" and (deployment := deployment_named(ref.name)):
        return stack.get(("Deployment", deployment))
    return stack.get((ref.kind, ref.name))


def _consumes(pod: Pod) -> bool:
    """Reaches a GPU (or another accelerator) as a consumer does."""
    return pod.uses_gpu or bool(pod.resource_claims) or bool(pod.other_accelerators)


def _validation_pod(pod: Pod) -> bool:
    # The GPU Operator's validator creates these (nvidia-cuda-validator-*,
    # nvidia-device-plugin-validator-*) with its validator DaemonSet's owner, the ClusterPolicy.
    images = [c.image for c in pod.containers if not c.ephemeral]
    return (
        pod.owner_kind == "ClusterPolicy"
        and bool(images)
        and all(repository_name(i) == VALIDATOR_IMAGE for i in images)
    )


def _dra_daemon(workload: Workload, pod: Pod) -> bool:
    """A ComputeDomain daemon: a DaemonSet of the DRA driver's image holding only DRA claims."""
    return (
        workload.kind == "DaemonSet"
        and all(component_of(i) == "dra_driver" for i in workload.images.values())
        and not pod.uses_gpu
        and not pod.other_accelerators
    )


def _runs(workload: Workload, component: str) -> bool:
    return any(component_of(i) == component for i in workload.images.values())
