"""Pods' holds on a node's GPUs through DRA ResourceClaims (DESIGN §2). PURE.

Each GPU or MIG device (NVIDIA's gpu.nvidia.com, or AMD's gpu.amd.com: a whole GPU or a
partition) a pod's claims hold is a holding named by its UUID (or its DRA name where the slice
publishes none, as AMD's never does), so parties on different devices do not meet and parties on
the same one do, whatever way each got it. An AMD compute partition (mig_ci) is held as the GPU
it is on (HeldDevice.gpu), so partitions of one GPU meet though their device names differ, and
as any GPU of its pool where its slice does not say which: they may meet. A claim several pods
use gives each of them the same device: pods of two tenants on one claim are co-tenants on it.
A platform namespace's adminAccess claim (a monitoring agent) is the platform's reach, not a
holding: it meets no one.
"""

from __future__ import annotations

from inventory.dra_devices import AMD_DRIVER, DraIndex, HeldDevice, gpu_classes_of_pod, is_admin
from inventory.snapshot import Node, Pod
from inventory.snapshot.accelerators import is_judged_accelerator
from inventory.snapshot_dra import DraClaim
from posture.inputs import PostureInputs
from posture.rules.holding import GpuHolding

GPU_POOL = "nvidia.com/gpu"
AMD_POOL = "amd.com/gpu"


def dra_index(inputs: PostureInputs) -> DraIndex:
    """The snapshot's DRA objects, indexed once per evaluation."""
    key = ("dra_index",)
    if key not in inputs.memo:
        # The platform's adminAccess claims (monitoring) are its reach, not tenant sharing.
        inputs.memo[key] = DraIndex(inputs.snapshot, inputs.platform_namespaces)
    return inputs.memo[key]  # type: ignore[return-value]  # memo[key] holds what this function stored under it


def dra_holdings(inputs: PostureInputs, node: Node) -> list[GpuHolding]:
    """Every active pod's GPU devices on `node` held through DRA claims."""
    if not inputs.snapshot.dra_claims:
        return []
    index = dra_index(inputs)
    holdings: list[GpuHolding] = []
    for pod in inputs.pods_by_node.get(node.name, ()):
        if not pod.resource_claims:
            continue
        tenant = inputs.tenant_of_pod(pod)
        for claim in index.claims_of_pod(pod):
            for held in index.held_devices(claim):
                if not held.kind or (held.node and held.node != node.name):
                    continue
                if claim.namespace in index.platform and is_admin(claim, held.result):
                    continue  # the platform's monitoring reach, as DCGM-Exporter's: no holding
                holdings.append(
                    GpuHolding(
                        pod,
                        tenant,
                        f"resourceclaim/{claim_ref(claim)}",
                        held_pool(held),
                        1,
                        held.mode,
                        held_gpus(held),
                        held_basis(held),
                        device_class=index.device_class_of(claim, held.result),
                        own_mode="" if held.own_mode == held.mode else held.own_mode,
                    )
                )
    return holdings


def nvidia_claim_pods(inputs: PostureInputs, node: Node) -> frozenset[int]:
    """The pods on `node` (by id) whose DRA claim holds an NVIDIA GPU or MIG device of it. Such
    a pod holds a GPU as a GPU request does, and the CDI edits its devices come through (the
    NVIDIA DRA driver's included) set NVIDIA_VISIBLE_DEVICES=void over the container's own env:
    env_holdings counts no hold through the variable for it, and POD-011 judges none. Once per
    node and evaluation: POD-011 asks it of every pod."""
    key = ("dra_nvidia_claim_pods", node.name)
    if key not in inputs.memo:
        inputs.memo[key] = frozenset(
            id(h.pod) for h in dra_holdings(inputs, node) if h.pool.startswith("nvidia.com/")
        )
    return inputs.memo[key]  # type: ignore[return-value]  # memo[key] holds what this function stored under it


def uses_gpu(inputs: PostureInputs, pod: Pod) -> bool:
    """A pod that holds a GPU any way (DESIGN §2): a GPU resource, a fraction, a DRA claim of
    a GPU device class (allocated or not yet), or NVIDIA_VISIBLE_DEVICES its node honours.

    NVIDIA's side of "a GPU pod": uses_accelerator adds the other vendors' accelerators for
    the checks whose question does not depend on the vendor. A hold through the variable
    counts where the node honours it (posture.rules.env_holdings' holdings): where that is
    unverified no hold is claimed, here as in the sharing checks, and POD-011 says what would
    happen.

    Once per pod and evaluation: about six checks ask it of every pod. Keyed by id, with the
    pod kept beside its answer so the id cannot be reused by another object meanwhile."""
    answers: dict[int, tuple[Pod, bool]] = inputs.memo.setdefault(("uses_gpu",), {})
    found = answers.get(id(pod))
    if found is None or found[0] is not pod:
        found = answers[id(pod)] = (pod, _uses_gpu(inputs, pod))
    return found[1]


def uses_accelerator(inputs: PostureInputs, pod: Pod) -> bool:
    """A pod that holds a GPU of any vendor: uses_gpu, or another vendor's accelerator its
    device plugin hands out (`amd.com/gpu`, `habana.ai/gaudi`, `gpu.intel.com/xe`, ...;
    inventory.snapshot.accelerators). The notion of "a GPU pod" of the checks whose question
    does not depend on the vendor: who owns it (TEN-001), which pool it runs in (POD-009),
    what identity it runs as (POD-010), its egress (K8S-007) and admission (K8S-009). The
    NVIDIA sharing, stack and visible-devices checks keep uses_gpu."""
    return uses_gpu(inputs, pod) or any(
        is_judged_accelerator(name) for c in pod.containers for name in c.accelerators
    )


def _uses_gpu(inputs: PostureInputs, pod: Pod) -> bool:
    if pod.uses_gpu or _claims_gpu(inputs, pod):
        return True
    # Imported here: env_holdings builds on posture.rules.common, which imports this module.
    from posture.rules.env_holdings import holds_through_env

    return holds_through_env(inputs, pod)


def _claims_gpu(inputs: PostureInputs, pod: Pod) -> bool:
    snapshot = inputs.snapshot
    if not pod.resource_claims or not (snapshot.dra_claims or snapshot.dra_claim_templates):
        return False
    index = dra_index(inputs)
    held = any(h.kind for c in index.claims_of_pod(pod) for h in index.held_devices(c))
    return held or bool(gpu_classes_of_pod(index, pod))


def held_gpus(held: HeldDevice) -> tuple[str, ...] | None:
    """The devices a holding names (GpuHolding.devices): the device itself, or for an AMD
    compute partition the GPU it is on, None (any of the pool's) where not published."""
    if held.result.driver == AMD_DRIVER and held.mode == "mig_ci":
        return (held.gpu,) if held.gpu else None
    return (held.device_id,)


def held_pool(held: HeldDevice) -> str:
    """The physical pool a DRA device belongs to, spelled as the vendor's device plugin would
    (AMD's advertises amd.com/gpu, and a partition mode as amd.com/<mode>: amd.com/cpx_nps4)."""
    if held.result.driver == AMD_DRIVER:
        if (held.kind == "partition" or held.gpu) and held.profile:
            return f"amd.com/{held.profile}"
        return AMD_POOL
    if held.kind == "mig":
        return f"nvidia.com/mig-{held.profile}" if held.profile else "nvidia.com/mig"
    return GPU_POOL


def claim_ref(claim: DraClaim) -> str:
    """A claim as "<namespace>/<name>": claims are namespaced, so the bare name says neither
    whose it is nor lets tenants.redaction hide it (it hides objects by their namespace, and
    a bare name like "gpu" could be anyone's)."""
    return f"{claim.namespace}/{claim.name}"


def held_basis(held: HeldDevice) -> str:
    r = held.result
    return f"ResourceClaim {claim_ref(held.claim)}: {r.driver} {r.pool}/{r.device}; {held.basis}"
