"""Pods' holds on a node's GPUs through NVIDIA_VISIBLE_DEVICES outside the scheduler (DESIGN §2,
"a GPU reaches a pod by any of"). PURE.

The NVIDIA Container Toolkit hands a container the GPUs its NVIDIA_VISIBLE_DEVICES names: a
privileged container's always, an unprivileged one's where the node's toolkit accepts the
variable (`accept-nvidia-visible-devices-envvar-when-unprivileged`; the toolkit's hook ignores
that setting for privileged containers, its own tests pin it). Such a container runs on those
GPUs beside whoever the scheduler gave them to, with nothing between them: the driver
time-shares the GPU between their contexts. So the hold is `time_slicing` (DESIGN §2: no
memory, fault, performance isolation, no attribution) on `nvidia.com/gpu`, whatever mode the
other holders got their GPU by.

The rule:
- a tenant pod's container (the platform's device plugin and DCGM-Exporter set the variable by
  design: their reach, not a holding) that sets the variable in `env` or `envFrom` as POD-011
  reads it, and requests no GPU resource (one that does already holds a GPU: no double count);
- `all` -> every GPU of the node; a list of indices or GPU / MIG UUIDs -> those, an index
  mapped to its UUID where the node's DRA ResourceSlices publish both, else kept as
  "gpu-index:<n>" (and the basis says the UUID is not known); `void`, `none`, empty -> none;
  a value that cannot be read (a Secret, a ConfigMap not in the snapshot) -> no holding (which
  GPUs it names is unknown; POD-011 says the value is unread);
- the node honours the variable (EnvvarAccess.honoured True, or the container is privileged):
  a holding. Not honoured: none. Unverified: no holding (the product cannot see the access
  happen, so no co-tenancy is claimed) and POD-011 names the holders it would meet if honoured;
- a node whose GPUs go to VMs (GPU Operator sandbox workloads) runs no container toolkit: no
  access at all, privileged or not (pod.visible_devices.gpus_go_to_vms);
- a pod whose RuntimeClass handler runs it in a Kata guest VM (kata-qemu-nvidia-gpu, -snp,
  -tdx, ...) is never seen by the host's toolkit: no access, privileged or not
  (inventory.sources.nvidia_runtime.vm_runtime);
- an image's own ENV is not in any manifest: no holding (STACK-008 says which nodes let it in);
- an init container (not a native sidecar) of a Running pod has finished: no holding now.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from inventory.snapshot import Container, Node, Pod
from inventory.sources.nvidia_runtime import vm_runtime
from posture.inputs import PostureInputs, TenantInfo
from posture.rules.common import (
    MIG_POOL_PREFIX,
    container_path,
    gpu_holdings,
    nodes_by_name,
    pod_ref,
)
from posture.rules.dra_holdings import nvidia_claim_pods
from posture.rules.holding import ENV_RESOURCE, EVERY_GPU, UUID_PREFIXES, GpuHolding, device_kind
from posture.rules.pod.visible_devices import (
    VISIBLE_DEVICES,
    allocated_gpus,
    env_configmaps_by_name,
    gpus_go_to_vms,
    judged_containers,
    visible_devices_env,
)
from posture.rules.stack.visible_devices import node_envvar_access

GPU_POOL = "nvidia.com/gpu"


@dataclass(frozen=True)
class EnvAccess:
    """One container's NVIDIA_VISIBLE_DEVICES on a node, and whether the node acts on it."""

    pod: Pod
    tenant: TenantInfo
    container: Container
    found: dict[str, Any]  # visible_devices_env's reading: field, value, where it was read
    honoured: bool | None  # None: the node's toolkit setting is not known
    why: str  # why honoured (or not, or unverified)
    devices: tuple[str, ...] | None  # None: the value could not be read
    every_device: bool = False
    unmapped: tuple[str, ...] = ()  # indices the node's inventory names no UUID for
    workload: str = ""  # the workload behind the pod ("Deployment ns/name")

    def holding(self) -> GpuHolding:
        return GpuHolding(
            self.pod,
            self.tenant,
            ENV_RESOURCE,
            GPU_POOL,
            max(1, len(self.devices or ())),
            "time_slicing",
            self.devices or None,
            self.basis(),
            every_device=self.every_device,
            workload=self.workload,
        )

    def basis(self) -> str:
        value = self.found.get("value")
        reach = EVERY_GPU if self.every_device else ", ".join(self.devices or ()) or "no GPU"
        text = (
            f"through {VISIBLE_DEVICES}={value} (container {self.container.name}, "
            f"{self.found['field']}), outside the scheduler: {reach}, time-shared with whoever "
            f"holds it, no isolation; {self.why}"
        )
        if self.unmapped:
            text += (
                f"; GPU index {', '.join(self.unmapped)} has no UUID in the node's inventory, "
                "so it is matched by index only"
            )
        return text


def env_accesses(inputs: PostureInputs, node: Node) -> list[EnvAccess]:
    """Every tenant container on `node` that names GPUs in NVIDIA_VISIBLE_DEVICES without
    requesting one, honoured or not (once per node and evaluation)."""
    key = ("env_accesses", node.name)
    if key not in inputs.memo:
        inputs.memo[key] = tuple(_accesses(inputs, node))
    return list(inputs.memo[key])  # type: ignore[call-overload]  # memo[key] holds what this function stored under it


def env_holdings(inputs: PostureInputs, node: Node) -> list[GpuHolding]:
    """The holdings of the accesses the node acts on, with a readable device list."""
    return [a.holding() for a in env_accesses(inputs, node) if a.honoured and a.devices]


def holds_through_env(inputs: PostureInputs, pod: Pod) -> bool:
    """Whether the pod holds GPUs of its node through the variable (a holding above): the
    test dra_holdings.uses_gpu adds for a pod that requests none. Memoised per node: every
    check that asks "is this a GPU pod" asks it of every pod."""
    node = nodes_by_name(inputs).get(pod.node_name or "")
    if node is None or not node.is_gpu_node:
        return False
    key = ("env_gpu_pods", node.name)
    if key not in inputs.memo:
        inputs.memo[key] = frozenset(id(h.pod) for h in env_holdings(inputs, node))
    return id(pod) in inputs.memo[key]


def env_reach(inputs: PostureInputs, pod: Pod) -> list[str]:
    """How the pod holds GPUs through the variable (each holding's basis), for evidence."""
    if not holds_through_env(inputs, pod):
        return []
    node = nodes_by_name(inputs)[pod.node_name or ""]
    return [h.basis for h in env_holdings(inputs, node) if h.pod is pod]


def access_of(
    inputs: PostureInputs, node: Node, pod: Pod, container: Container
) -> EnvAccess | None:
    return next(
        (a for a in env_accesses(inputs, node) if a.pod is pod and a.container is container), None
    )


def reached_holders(inputs: PostureInputs, node: Node, access: EnvAccess) -> list[dict[str, Any]]:
    """Other pods' GPU holdings on the node the access reaches (or would, if honoured): every
    holding of nvidia.com/gpu when it names every GPU; where both sides name their devices by
    ids of one kind, only those sharing one; otherwise those that may (the plugin does not say
    which GPU it gave)."""
    if not access.devices:
        return []
    reached = []
    for h in gpu_holdings(inputs, node):
        if h.pod is access.pod or h.through_env or not reaches(access.holding(), h):
            continue
        reached.append(
            {
                "tenant": h.tenant.slug if h.tenant else "platform",
                "pod": pod_ref(h.pod),
                "resource": h.resource,
                "sharing_mode": h.mode,
            }
        )
    return sorted(reached, key=lambda e: (e["pod"], e["resource"]))


def reaches(env: GpuHolding, other: GpuHolding) -> bool:
    """Whether a hold through the variable may be on the same GPU as another holding of the
    node: always when it names every GPU; where both name their devices by ids of one kind,
    only if they share one; otherwise it may (the device plugin does not say which GPU it
    gave). Of MIG devices, `all` reaches every one, a MIG UUID the one it names
    (common.pools_by_mode says why)."""
    if other.pod is env.pod:
        return False
    if other.pool != GPU_POOL:
        if not other.pool.startswith(MIG_POOL_PREFIX):
            return False
        # `all`, or a MIG UUID the other holder is known to hold.
        named = set(env.devices or ()) & set(other.devices or ())
        return env.every_device or any(d.startswith("MIG-") for d in named)
    if env.every_device or env.devices is None or other.devices is None:
        return True
    kinds = {device_kind(d) for d in (*other.devices, *env.devices)}
    return len(kinds) != 1 or bool(set(other.devices) & set(env.devices))


def _accesses(inputs: PostureInputs, node: Node) -> list[EnvAccess]:
    if not node.is_gpu_node or gpus_go_to_vms(inputs, node):
        return []  # GPUs that go to VMs: no toolkit acts on the variable, privileged or not
    configmaps = env_configmaps_by_name(inputs)
    # A pod whose DRA claim holds an NVIDIA GPU of the node already holds one: counted once.
    claimed = nvidia_claim_pods(inputs, node)
    found_accesses = []
    for pod in inputs.pods_by_node.get(node.name, ()):
        tenant = inputs.tenant_of_pod(pod)
        if tenant is None or id(pod) in claimed or vm_runtime(pod):
            continue  # a Kata pod's variable is read in its guest VM, never by the host's toolkit
        for container in judged_containers(pod):
            if allocated_gpus(container, node):
                continue  # a GPU resource already holds its GPUs (POD-011 judges the override)
            if container.init and not container.sidecar and pod.phase == "Running":
                continue  # a running pod's init containers have finished: they hold nothing now
            path = container_path(pod, container)
            found = visible_devices_env(container, path, pod.namespace, configmaps)
            if found is None:
                continue
            honoured, why = _honoured(inputs, node, container)
            devices, every, unmapped = _devices(inputs, node, found.get("value"))
            found_accesses.append(
                EnvAccess(
                    pod,
                    tenant,
                    container,
                    found,
                    honoured,
                    why,
                    devices,
                    every,
                    unmapped,
                    inputs.workload_of(pod).ref(),
                )
            )
    return found_accesses


def _honoured(inputs: PostureInputs, node: Node, container: Container) -> tuple[bool | None, str]:
    if container.privileged:
        return True, (
            "the container is privileged: the toolkit honours the variable from privileged "
            "containers whatever accept-nvidia-visible-devices-envvar-when-unprivileged says"
        )
    access = node_envvar_access(inputs, node)
    source = access.toolkit_accepts.source
    if access.toolkit_accepts.value is None:
        source = access.device_list_strategy.source
    words = {True: "the node honours it", False: "the node ignores it", None: "unverified"}
    return access.honoured, f"{words[access.honoured]} from unprivileged pods ({source})"


def _devices(
    inputs: PostureInputs, node: Node, value: str | None
) -> tuple[tuple[str, ...] | None, bool, tuple[str, ...]]:
    """(devices, every GPU, indices without a UUID) the value names; devices None when the
    value could not be read, () when it names none."""
    if value is None:
        return None, False, ()
    uuids = node_gpu_uuids(inputs, node)
    words = [w.strip() for w in value.split(",") if w.strip()]
    if not words or words[0].lower() in ("void", "none"):
        return (), False, ()
    if any(w.lower() == "all" for w in words):
        count = len(uuids) or node.container_gpus or 0  # vfio-bound GPUs: not the toolkit's
        every = tuple(sorted(uuids.values())) or tuple(f"gpu-index:{i}" for i in range(count))
        return every, True, ()
    devices, unmapped = [], []
    for word in words:
        if word.startswith(UUID_PREFIXES):
            devices.append(word)
        elif word in uuids:
            devices.append(uuids[word])
        else:
            devices.append(f"gpu-index:{word}")  # a MIG "<gpu>:<mig>" index stays as written
            unmapped.append(word)
    return tuple(sorted(set(devices))), False, tuple(unmapped)


def node_gpu_uuids(inputs: PostureInputs, node: Node) -> dict[str, str]:
    """GPU index -> UUID where the node's inventory lists them: the NVIDIA DRA driver's
    ResourceSlices publish both for each whole GPU of the node."""
    found = {}
    for slice_ in inputs.snapshot.dra_slices:
        if slice_.node_name != node.name:
            continue
        for device in slice_.devices:
            attributes = device.attributes
            uuid, index = attributes.get("uuid", ""), attributes.get("index", "")
            if attributes.get("type", "").lower() == "gpu" and uuid.startswith("GPU-") and index:
                found[index] = uuid
    return found
