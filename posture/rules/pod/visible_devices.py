"""POD-011: GPU access that bypasses the scheduler through NVIDIA_VISIBLE_DEVICES (DESIGN §2)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, cast

from inventory.env_holds import VISIBLE_DEVICES, visible_devices_read
from inventory.snapshot import Container, EnvConfigMap, Node, Pod
from inventory.snapshot.quantity import gpu_count
from inventory.sources.node_kinds import sandbox_default, sandbox_workload
from inventory.sources.nvidia_runtime import vm_runtime
from inventory.visible_devices import PLUGIN_DEFAULT_STRATEGY, EnvvarAccess
from posture.inputs import PostureInputs
from posture.rules.common import (
    container_path,
    nodes_by_name,
    tenant_pods,
)
from posture.rules.dra_holdings import nvidia_claim_pods
from posture.rules.plugin_holdings import SCHEDULER_SHARES, holds_device, scheduler_shares
from posture.rules.pod.container_findings import (
    ContainerHit,
    PodHits,
    container_drafts,
    containers_named,
)
from posture.rules.pod.vendor_visible_devices import vendor_facts, vendor_hits
from posture.rules.registry import DRA_KINDS, MEMBERS_SHOWN, FindingDraft, check
from posture.rules.stack.visible_devices import node_envvar_access
from tenants.policy import FRACTIONAL_RESOURCES

VISIBLE_DEVICES_OFF = ("", "void", "none")
ConfigMaps = Mapping[tuple[str, str], EnvConfigMap]


def env_configmaps_by_name(inputs: PostureInputs) -> ConfigMaps:
    """The ConfigMaps containers' env reads, by (namespace, name): built once per evaluation
    (POD-011 and every GPU node's env holdings ask), so it is shared and not to be changed."""
    key = ("env_configmaps_by_name",)
    if key not in inputs.memo:
        inputs.memo[key] = {(c.namespace, c.name): c for c in inputs.snapshot.env_configmaps}
    return cast("ConfigMaps", inputs.memo[key])  # what this function stored


def gpus_go_to_vms(inputs: PostureInputs, node: Node) -> bool:
    """The GPU Operator gives the node's GPUs to VMs (`nvidia.com/gpu.workload.config`
    vm-passthrough or vm-vgpu, else the ClusterPolicies' sandbox default, as the inventory reads
    it): no container toolkit runs there, so NVIDIA_VISIBLE_DEVICES reaches no GPU from any
    container, privileged or not. What a privileged container sees under /dev there (VFIO
    groups, a vGPU host's device nodes) it sees without the variable: POD-001's finding."""
    key = ("sandbox_default",)
    if key not in inputs.memo:
        policies = inputs.snapshot.gpu_operator_policies
        inputs.memo[key] = sandbox_default(p.spec for p in policies if not p.error)
    default = cast("str", inputs.memo[key])  # what this function stored
    vm = sandbox_workload(node.labels, default, node.gpu_capacity)
    return node.is_gpu_node and vm is not None


def visible_devices_env(
    container: Container, path: str, namespace: str = "", configmaps: ConfigMaps | None = None
) -> dict[str, Any] | None:
    """The container's NVIDIA_VISIBLE_DEVICES as Kubernetes sets it (inventory.env_holds'
    reading, its field under `path`), if it asks for devices: a value that cannot be read (a
    Secret, a ConfigMap not in the snapshot) counts as asking; an envFrom source whose keys are
    not known sets nothing we can see."""
    found = visible_devices_read(container, namespace, configmaps or {})
    if found is None:
        return None
    value = found["value"]
    if value is not None and value.strip().lower() in VISIBLE_DEVICES_OFF:
        return None
    return dict(found, field=f"{path}.{found['field']}")  # keeps the key order


@check(
    id="POD-011",
    needs=(*DRA_KINDS, "RuntimeClass"),
    title="Container reaches GPUs through NVIDIA_VISIBLE_DEVICES without requesting one",
    severity="high",
    scope="tenant",
    rationale=(
        "The NVIDIA Container Toolkit injects the GPUs named in NVIDIA_VISIBLE_DEVICES into "
        "any container on the node unless it is configured to ignore the variable for "
        "unprivileged containers (STACK-008 says which nodes do). A container that sets it "
        "(e.g. `all` or a GPU index), literally, from a ConfigMap key (`configMapKeyRef`) or "
        "through `envFrom`, without requesting an `nvidia.com/*` resource gets GPUs the "
        "scheduler never "
        "allocated: outside quota and accounting, on devices allocated to other tenants, and "
        "invisible to attribution (a compute-hijacking path, T1496.001). Requesting a GPU "
        "does not cover it: the kubelet applies the pod's env after the device plugin's, so "
        "under the plugin's default device-list strategy `envvar` a container that requests "
        "one GPU and sets `all` sees every GPU of the node (where the strategy is not known, "
        "the finding says so). A node with no device plugin whose Running pods pick NVIDIA's "
        "runtime by RuntimeClass (`runtimeClassName: nvidia` on k3s, a Jetson) is a GPU node "
        "too: its pods that set the variable are reported there. Where the node honours the "
        "variable (or the container is "
        "privileged: the toolkit honours it from privileged containers whatever its setting) "
        "the access is a GPU holding, time-sliced with whoever holds those GPUs, which the "
        "sharing, approval, pool and attribution checks judge; where that is unverified the "
        "evidence names the holders it would time-slice with, and no sharing finding is "
        "claimed. A node that gives its GPUs to VMs (`nvidia.com/gpu.workload.config` "
        "vm-passthrough or vm-vgpu) runs no container toolkit, so the variable reaches no GPU "
        "there from any container and is not reported (what a privileged container sees under "
        "/dev there is POD-001's). Nor is a pod whose RuntimeClass handler runs it in a "
        "Kata guest VM (`kata-qemu-nvidia-gpu`, `-snp`, `-tdx`, any `kata*` handler): the "
        "host's toolkit acts only for the handler it is installed as, and a GPU reaches the "
        "VM only by passthrough of a resource the pod requests. Runtimes modelled on "
        "NVIDIA's do the same with their own variable: Intel Gaudi's habana-container-runtime "
        "with HABANA_VISIBLE_DEVICES, AMD's "
        "Container Toolkit with AMD_VISIBLE_DEVICES; on a node holding that vendor's devices "
        "a container setting it without requesting one is reported, the access unverified "
        "(the node's runtime configuration is not read); never on a node without them, and "
        "ROCR_VISIBLE_DEVICES or HIP_VISIBLE_DEVICES, which only narrow the devices a "
        "container already has, are not. Platform pods are "
        "exempt by design (the device plugin and DCGM-Exporter set it legitimately); images "
        "that set it in their own ENV are not visible to the API and need the toolkit "
        "setting below."
    ),
    remediation=(
        "Remove NVIDIA_VISIBLE_DEVICES from the container at the field in the evidence (or "
        "set it to `void`) and request GPUs through `resources.limits` (`nvidia.com/gpu` or "
        "a MIG resource). On every GPU node set "
        "`accept-nvidia-visible-devices-envvar-when-unprivileged = false` in "
        "/etc/nvidia-container-runtime/config.toml (GPU Operator: "
        "`toolkit.env` ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED=false with the "
        "device plugin's `deviceListStrategy: volume-mounts` or CDI)."
    ),
    severity_rule=(
        "Lowered to low where the node's toolkit ignores the variable from unprivileged "
        "containers and the container is not privileged (latent: it reaches no GPU there "
        "now); high where any replica's node honours it or that is unverified."
    ),
    mappings=("SP800-53:AC-3", "ATT&CK:T1496.001"),
)
def visible_devices_without_request(inputs: PostureInputs) -> Iterator[FindingDraft]:
    nodes = nodes_by_name(inputs)
    configmaps = env_configmaps_by_name(inputs)
    found = []
    for pod, tenant in tenant_pods(inputs):
        node = nodes.get(pod.node_name or "")
        if node is None:
            continue
        if vm_runtime(pod):
            # A Kata pod runs in a guest VM: no host runtime hook (NVIDIA's, AMD's, Habana's)
            # acts for it, and only GPUs it requests are passed through to the VM.
            continue
        # Another vendor's runtime and its variable (AMD's, Habana's) on a node of its devices.
        vendor = vendor_hits(node, pod, judged_containers(pod), configmaps)
        if not node.is_gpu_node or _claims_a_gpu(inputs, node, pod) or gpus_go_to_vms(inputs, node):
            # No NVIDIA GPU to reach, or none through the variable (a claim's CDI edits, a
            # node whose GPUs go to VMs runs no toolkit: not even latently).
            if vendor:
                found.append(PodHits(pod, tenant, vendor, pod_facts=vendor_facts(node)))
            continue
        access = node_envvar_access(inputs, node)
        hits = [
            hit
            for container in judged_containers(pod)
            if (hit := _access_hit(inputs, node, access, pod, container, configmaps)) is not None
        ]
        nvidia = {hit.container.name for hit in hits}
        hits += [hit for hit in vendor if hit.container.name not in nvidia]
        node_facts = {
            "node_gpu_model": node.gpu_model,
            "node_gpu_count": node.gpu_count,
            # STACK-008's verdict: whether the node's toolkit acts on the variable at all.
            "node_honours_visible_devices": access.verdict,
            "node_device_list_strategy": access.device_list_strategy.value,
        }
        if pod.runtime_class:  # `nvidia` on a node with no device plugin (k3s on a Jetson)
            node_facts["runtime_class"] = pod.runtime_class
        found.append(PodHits(pod, tenant, hits, pod_facts=node_facts))
    yield from container_drafts("POD-011", inputs, found, title=_access_title)


LATENT_NOTE = " (ignored by the node's toolkit: latent)"


def _access_hit(
    inputs: PostureInputs,
    node: Node,
    access: EnvvarAccess,
    pod: Pod,
    container: Container,
    configmaps: ConfigMaps,
) -> ContainerHit | None:
    path = container_path(pod, container)
    found = visible_devices_env(container, path, pod.namespace, configmaps)
    if found is None:
        return None
    asked = allocated_gpus(container, node)
    overrides = _overrides(access, container) if asked else None
    if asked and overrides is None:
        return None  # the plugin's mounts or CDI devices win over the variable
    evidence = {
        "container": container.name,
        "init_container": container.init,
        "image": container.image,
        **found,
        "gpu_requests": dict(container.gpu_requests) if asked else {},
        "gpu_limits": dict(container.gpu_limits) if asked else {},
    }
    if asked:
        evidence["requested_gpus"] = asked
        evidence["overrides_allocation"] = overrides
    facts: dict[str, Any] = {}
    # The node's toolkit ignores the variable from unprivileged containers: it reaches no GPU
    # there now, a latent access (it would on a node that honours it). Every hit says its
    # severity, so a replica on an honouring node keeps the finding high.
    if not asked and access.honoured is False and not container.privileged:
        facts["basis"] = (
            "latent: the node's toolkit ignores NVIDIA_VISIBLE_DEVICES from unprivileged "
            "containers, so it reaches no GPU here now"
        )
        return ContainerHit(container, evidence, "low", facts, LATENT_NOTE)
    note = "" if asked else _cotenancy(inputs, node, pod, container, facts)
    return ContainerHit(container, evidence, "high", facts, note)


def _access_title(ref: str, entries: list[dict[str, Any]], hits: list[ContainerHit]) -> str:
    """What the containers set, over or without a GPU request; then what it does on this pod's
    node: latent where it is for each of them, else the first co-tenancy said."""
    named = f"{containers_named(entries)} of {ref}"
    asked = ["requested_gpus" in e for e in entries]
    # Another vendor's variable (vendor_visible_devices) where every entry sets that one.
    variables = {e.get("variable", VISIBLE_DEVICES) for e in entries}
    variable = variables.pop() if len(variables) == 1 else "a visible-devices variable"
    if len(entries) == 1 and asked[0]:
        value = entries[0]["value"] if entries[0]["value"] is not None else "<unread>"
        gpus = entries[0]["requested_gpus"]
        what = f"sets {variable}={value} over the {gpus} GPU(s) it requested"
    elif len(entries) == 1:
        what = f"sets {variable} without requesting a GPU"
    elif all(asked):
        what = f"set {variable} over the GPUs they requested"
    elif any(asked):
        what = f"set {variable}, some without requesting a GPU"
    else:
        what = f"set {variable} without requesting a GPU"
    if all(hit.note == LATENT_NOTE for hit in hits):
        return f"{named} {what}{LATENT_NOTE}"
    said = [hit.note for hit in hits if hit.note and hit.note != LATENT_NOTE]
    return f"{named} {what}{said[0] if said else ''}"


def _cotenancy(
    inputs: PostureInputs, node: Node, pod: Pod, container: Container, evidence: dict[str, Any]
) -> str:
    """What the access does beside other pods' GPUs (posture.rules.env_holdings): said in the
    pod's entry of the evidence (it depends on the node), and in the title's tail. Honoured:
    it holds them by time-slicing (SHARE-001 and the other sharing checks judge the pairs).
    Unverified: no co-tenancy is claimed, but the one it would make is named, so it is not
    hidden either."""
    from posture.rules.env_holdings import access_of, reached_holders  # it imports this module

    access = access_of(inputs, node, pod, container)
    if access is None or access.honoured is False:
        return ""
    reached = reached_holders(inputs, node, access)
    evidence["honoured_here"] = "yes" if access.honoured else "unverified"
    evidence["honoured_because"] = access.why
    if access.devices is None:
        return ""
    key = "time_slices_gpus_held_by" if access.honoured else "would_time_slice_gpus_held_by"
    evidence[key] = reached[:MEMBERS_SHOWN]
    evidence["gpu_quota"] = (
        "not counted: a ResourceQuota on requests.nvidia.com/gpu cannot limit GPUs taken "
        "through the variable"
    )
    if not reached:
        return ""
    pods = len({entry["pod"] for entry in reached})
    if access.honoured:
        return f"; it time-slices GPUs {pods} other pod(s) hold"
    return f"; if the node honours it, it time-slices GPUs {pods} other pod(s) hold"


def _overrides(access: EnvvarAccess, container: Container) -> str | None:
    """Why the container's own NVIDIA_VISIBLE_DEVICES replaces the GPUs the device plugin
    allocated to it, or None where the allocation wins. The kubelet appends the pod's env
    after the plugin's, so the pod's value is the one the runtime sees: with the plugin's
    default device-list strategy `envvar` the toolkit injects whatever the pod names (`all`:
    every GPU of the node, other tenants' included). With `volume-mounts` or CDI the toolkit
    takes the plugin's mounts or CDI devices first and ignores the variable."""
    strategy = access.device_list_strategy
    if strategy.value is None:
        return (
            f"unverified: the node's device-list strategy is not known ({strategy.source}); "
            f"under the plugin's default ({PLUGIN_DEFAULT_STRATEGY}) the pod's value replaces "
            "the GPUs the device plugin allocated"
        )
    if PLUGIN_DEFAULT_STRATEGY not in strategy.value.split(","):
        return None
    if access.toolkit_accepts.value == "false" and not container.privileged:
        return None  # the toolkit ignores the variable from this container altogether
    return (
        f"device-list strategy {strategy.value} ({strategy.source}): the device plugin hands "
        "its GPUs over in this variable and the kubelet applies the pod's env after the "
        "plugin's, so the pod's value replaces the allocation"
    )


def _claims_a_gpu(inputs: PostureInputs, node: Node, pod: Pod) -> bool:
    """The pod holds an NVIDIA GPU of the node through a DRA claim: a request, and the CDI
    edits its devices come through set the variable to `void` (posture.rules.env_holdings)."""
    return id(pod) in nvidia_claim_pods(inputs, node)


def judged_containers(pod: Pod) -> list[Container]:
    """Every container but the one of a KAI fraction pod KAI's binder sets the variable in,
    from a ConfigMap, to the GPU the fraction's reservation holds (Pod.fraction_container:
    the container `gpu-fraction-container-name` names, else the first app container)."""
    fraction = pod.fraction_container
    return [c for c in pod.containers if c is not fraction]


def allocated_gpus(container: Container, node: Node) -> int:
    """How many GPU devices (or HAMi shares of one) the container asks for; 0 for none. Not
    any nvidia.com/* name: a limit of 0 allocates nothing, and the NVIDIA Network Operator's
    SR-IOV NICs (`nvidia.com/hostdev`, ...) are not GPUs; the variable then still hands over
    GPUs. A quantity that cannot be read counts as one (do not accuse on a guess)."""
    asked = {**container.gpu_requests, **container.gpu_limits}
    devices = sum(
        gpu_count(qty)
        for name, qty in asked.items()
        if holds_device(node, name) and name not in SCHEDULER_SHARES
    )
    # A sharing scheduler's names count GPUs by their own unit (Koordinator's `gpu-core: 50`
    # is half of one GPU, Aliyun's `gpu-mem: 8` GiB of one): plugin_holdings.scheduler_shares.
    devices += sum(
        n for _, n in scheduler_shares({k: gpu_count(v) for k, v in asked.items()}).values()
    )
    # HAMi's memory and core counters ride on a device; alone they still get a share of one.
    shares = any(gpu_count(qty) for name, qty in asked.items() if name in FRACTIONAL_RESOURCES)
    return devices or int(shares)
