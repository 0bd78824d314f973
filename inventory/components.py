"""Which parts of the GPU host stack a GPU node runs, and what is known of each. PURE.

Each component is `installed` (its version is known), `unknown` (it is deployed, or must be
there, but its version cannot be read) or `not_installed` (the snapshot shows it is not deployed
for the node: no pod of it there, and no DaemonSet of it that schedules there; where the
snapshot holds no DaemonSets, no pod of it there, and its reason says that whether a DaemonSet
would run one is not known; where it holds neither DaemonSets nor any pod of a stack component,
nothing is said absent: StackFacts.stack_pods_read). A component that
is not installed is left out of the patch judgement: a node without a DCGM exporter is not
"unknown" because a DCGM-Exporter bulletin was imported.

The driver and the container toolkit are always there on a GPU node: the GPUs cannot reach a
container without them, and both may be installed on the host where the Kubernetes API does not
show them. So they are never "not installed", only known or unknown.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from inventory.bottlerocket import bottlerocket_nvidia, bottlerocket_plugin_host
from inventory.operator_nodes import operator_absent
from inventory.placement import workload_fit
from inventory.snapshot import Pod, Taint, Workload
from inventory.sources.images import (
    GKE_BUILD_NOTE,
    SANDBOX_OPERANDS,
    component_of,
    container_component,
    gke_build_tag,
    other_device_plugin,
    stack_version,
)
from inventory.sources.node_versions import (
    OperatorPodVersion,
    operator_pod_version,
    vgpu_guest_driver,
    vgpu_guest_note,
)

# component -> the node field holding its version
COMPONENT_FIELDS = {
    "driver": "driver_version",
    "container_toolkit": "container_toolkit_version",
    "device_plugin": "device_plugin_version",
    "gpu_operator": "gpu_operator_version",
    "dcgm_exporter": "dcgm_exporter_version",
    "mig_manager": "mig_manager_version",
    # The NVIDIA DRA driver's kubelet plugin: the device-plugin layer where DRA hands out GPUs.
    "dra_driver": "dra_driver_version",
    # Never visible through the Kubernetes API (only an nvidia-smi import gives it): coverage,
    # judged only where a bulletin names firmware for the node's GPU model.
    "firmware": "firmware_version",
}
ESSENTIAL = ("driver", "container_toolkit")
PER_NODE = ("device_plugin", "dcgm_exporter", "mig_manager", "dra_driver")
INSTALLED, UNKNOWN, NOT_INSTALLED = "installed", "unknown", "not_installed"
STATES = (INSTALLED, UNKNOWN, NOT_INSTALLED)
LABELS = {
    "driver": "Driver",
    "container_toolkit": "Container toolkit",
    "device_plugin": "Device plugin",
    "gpu_operator": "GPU Operator",
    "dcgm_exporter": "DCGM exporter",
    "mig_manager": "MIG manager",
    "dra_driver": "DRA driver (kubelet plugin)",
    "firmware": "Firmware (VBIOS)",
}
# What `nvidia-smi -q -x` shows of the stack: on a node described by it alone (no Kubernetes
# API record, so no pods or labels), every other component is unknown, and not reported by
# STACK-004 nor judged for its patch status: no Kubernetes workload reaches the host through
# them, and where gpuposture knows nothing it does not shout (docs/clusters.md).
HOST_READ = ("driver", "firmware")
HOST_ONLY = "nvidia-smi"  # snapshot Node.described_by of such a node
NOT_READ_ON_HOST = (
    "nvidia-smi -q -x does not show it, and the Kubernetes API does not list this node"
)
FIRMWARE_SOURCE = "nvidia-smi -q -x imported for the node"
FIRMWARE_UNKNOWN = (
    "the Kubernetes API never shows the VBIOS: import `nvidia-smi -q -x` for the node"
)


@dataclass(frozen=True)
class StackFacts:
    """What the cluster shows of its GPU stack beyond any one node."""

    pods_read: bool  # False: the snapshot has no pods, so nothing can be said to be absent
    daemonsets: tuple[Workload, ...] = ()  # DaemonSets whose pods run a GPU-stack component
    # The GPU Operator's sandbox operands (operator_nodes.SANDBOX_OPERANDS), known by name: their
    # images name no component, yet they show where the Operator manages a VM node.
    sandbox_operands: tuple[Workload, ...] = ()
    operator: str | None = None  # where the GPU Operator was seen; None: nowhere
    # Where no Deployment of the Operator was read: its pod whose image tag gives its version.
    operator_pod: OperatorPodVersion | None = None
    # component -> a DaemonSet that runs it (its pods name it as owner) whose spec is not in the
    # snapshot: where it schedules is not known, so a node without its pod stays unknown.
    unplaced: dict[str, str] = field(default_factory=dict)
    # False: the read holds no DaemonSet (a snapshot file that did not export them), so a node
    # without a component's pod is said not to run it, never that no DaemonSet would.
    daemonsets_read: bool = True
    # False: the read holds no DaemonSets and no pod of a GPU stack component: its pods may be
    # those of some namespaces only (a tenant's export, with or without kube-system's), so a
    # node without a component's pod may still run it. Its absence is
    # then unknown, never "not installed" (a VEX would say "component not present").
    stack_pods_read: bool = True


def stack_facts(
    workloads: Iterable[Workload],
    policies: Iterable[str],
    pods: Sequence[Pod],
    *,
    pods_read: bool | None = None,
    tenant_claimed: Collection[str] = (),
    daemonsets_read: bool = True,
) -> StackFacts:
    """`policies`: names of the GPU Operator ClusterPolicies; `pods_read` defaults to whether
    `pods` (the cluster's) holds any; `tenant_claimed`: the namespaces tenants claim, whose
    pods never give the Operator's version (operator_pod_version)."""
    workloads = list(workloads)
    daemonsets = tuple(
        w for w in workloads if w.kind == "DaemonSet" and any(map(component_of, w.images.values()))
    )
    return StackFacts(
        pods_read=bool(pods) if pods_read is None else pods_read,
        daemonsets=daemonsets,
        sandbox_operands=tuple(
            w
            for w in workloads
            if w.kind == "DaemonSet" and w.name in SANDBOX_OPERANDS and w not in daemonsets
        ),
        operator=_operator_seen(workloads, sorted(policies), pods),
        operator_pod=operator_pod_version(workloads, pods, tenant_claimed),
        unplaced=_unplaced(daemonsets, pods),
        daemonsets_read=daemonsets_read,
        stack_pods_read=daemonsets_read or _stack_pods_read(pods),
    )


def _stack_pods_read(pods: Sequence[Pod]) -> bool:
    """Whether the pods read include those of where the GPU stack runs: a pod of a stack
    component. kube-system's alone do not say so: the stack's namespace (gpu-operator, or
    wherever it was installed) may simply not have been exported, and a VEX must not call a
    component "not present" from a namespace it never read (found by a red team: a tenant's
    export plus kube-system's pods made the MIG manager's bulletins not_affected)."""
    return any(container_component(c.name, c.image, c.command) for p in pods for c in p.containers)


def _unplaced(daemonsets: tuple[Workload, ...], pods: Sequence[Pod]) -> dict[str, str]:
    known = {(d.namespace, d.name) for d in daemonsets}
    found: dict[str, str] = {}
    for pod in pods:
        if pod.owner_kind != "DaemonSet" or (pod.namespace, pod.owner_name) in known:
            continue
        for container in pod.containers:
            component = container_component(container.name, container.image, container.command)
            if component:
                found.setdefault(component, f"{pod.namespace}/{pod.owner_name}")
    return found


def _operator_seen(
    workloads: list[Workload], policies: list[str], pods: Sequence[Pod]
) -> str | None:
    for w in workloads:
        if w.kind == "Deployment" and any(
            component_of(i) == "gpu_operator" for i in w.images.values()
        ):
            return f"Deployment {w.namespace}/{w.name}"
    if policies:
        return f"ClusterPolicy {policies[0]}"
    for pod in pods:
        if pod.is_active and any(component_of(c.image) == "gpu_operator" for c in pod.containers):
            return f"pod {pod.namespace}/{pod.name}"
    return None


def presence(
    node_name: str,
    labels: Mapping[str, str],
    taints: Iterable[Taint],
    pods_on_node: Iterable[Pod],
    facts: StackFacts,
    plugin_resources: Sequence[str] = (),
    os_image: str | None = None,
    *,
    stack_pods: Sequence[Pod],
) -> tuple[dict[str, str], dict[str, str]]:
    """(deployed, not_installed) for one GPU node: component -> where it was seen / why it is
    not there. A component in neither is unknown: nothing says whether it is deployed.
    `plugin_resources`: the device-plugin resources the node offers (a device plugin is there,
    whatever the snapshot shows of it); `os_image`: the node's (Bottlerocket's nvidia variants
    run the device plugin on the host); `stack_pods`: those of `pods_on_node` in the platform's
    namespaces, the only ones whose stack images say a component runs here (a tenant's pod
    running the driver's image is no driver of the node's)."""
    pods_on_node = tuple(pods_on_node)
    seen = _pods_by_component(stack_pods)
    deployed = {c: f"pod {where}" for c, where in seen.items()}
    if "driver" in deployed and (guest := vgpu_guest_driver(labels, stack_pods)):
        deployed["driver"] += f" ({vgpu_guest_note(guest)})"
    not_installed: dict[str, str] = {}
    taints = tuple(taints)
    for component in PER_NODE:
        if component in seen or not facts.pods_read:
            continue
        fits, misses = _daemonsets(component, node_name, labels, taints, facts.daemonsets)
        if component in facts.unplaced and not fits:
            continue  # runs elsewhere by a DaemonSet whose placement the snapshot lacks
        if fits:
            deployed[component] = (
                f"DaemonSet {fits[0]} should run a pod here, but none is on the node"
            )
        elif component == "device_plugin" and (other := _other_plugin(pods_on_node)):
            deployed[component] = other
        elif component == "device_plugin" and bottlerocket_nvidia(os_image):
            # The OS image runs it, pod or not: deployed, its version unknown (never "not
            # installed", and more than "no pod of it is in the snapshot").
            deployed[component] = bottlerocket_plugin_host(os_image)
        elif component == "device_plugin" and plugin_resources:
            # Only a registered device plugin makes the kubelet offer these: it runs on the host
            # or in pods the snapshot lacks, so its version is unknown, never "not installed".
            deployed[component] = (
                f"the node offers {plugin_resources[0]}, which only a registered device plugin"
                " advertises; no pod of it is in the snapshot"
            )
        elif (facts.stack_pods_read or component == "device_plugin") and (
            not misses or all(fit is False for _, fit, _ in misses)
        ):
            # A device plugin says itself where it runs: the kubelet offers its resources. A
            # node offering none has none registered, whichever namespaces were read.
            not_installed[component] = _absent(misses, facts.daemonsets_read)
    if facts.operator:
        # Seen in the cluster, it is the node's only where it manages the node (operator_nodes).
        absent = (
            operator_absent(
                facts.operator,
                node_name,
                labels,
                taints,
                pods_on_node,
                (*facts.daemonsets, *facts.sandbox_operands),
            )
            if facts.pods_read
            else None  # as for the others: a snapshot without pods says nothing is absent
        )
        if absent:
            not_installed["gpu_operator"] = absent
        else:
            deployed["gpu_operator"] = _operator_source(facts.operator, facts.operator_pod)
    elif facts.pods_read and facts.stack_pods_read:
        not_installed["gpu_operator"] = (
            "no GPU Operator Deployment, pod or ClusterPolicy in the cluster"
        )
    return deployed, not_installed


def _operator_source(seen: str, from_pod: OperatorPodVersion | None) -> str:
    """Where the Operator was seen, and, where its version is its pod's image tag (no
    Deployment of it read), that pod: the version's source is said, never implied."""
    if from_pod is None:
        return seen
    if seen == f"pod {from_pod.pod}":
        return f"{seen} (its image tag gives the version: the snapshot holds no Deployment of it)"
    return (
        f"{seen} (version from the image tag of its pod {from_pod.pod}: the snapshot holds no "
        "Deployment of it)"
    )


# How the node's `deployed` says another project's device plugin runs there (_other_plugin).
OTHER_PLUGIN = "not NVIDIA's: no NVIDIA device-plugin version to judge"


def _other_plugin(pods: Iterable[Pod]) -> str | None:
    """Where another project's GPU device plugin runs on the node, said as such: the plugin is
    there, and its version is not one NVIDIA's device-plugin bulletins name."""
    for pod in sorted(pods, key=lambda p: (p.namespace, p.name)):
        for container in pod.containers if pod.is_active else ():
            if project := other_device_plugin(container.image):
                return (
                    f"{project} runs the device plugin here (pod {pod.namespace}/{pod.name}, "
                    f"{container.image}), {OTHER_PLUGIN}"
                )
    return None


def _pods_by_component(pods: Iterable[Pod]) -> dict[str, str]:
    seen: dict[str, str] = {}
    for pod in sorted(pods, key=lambda p: (p.namespace, p.name)):
        if not pod.is_active:
            continue  # a finished pod says what ran, not what runs
        for container in pod.containers:
            component = container_component(container.name, container.image, container.command)
            if component:
                where = f"{pod.namespace}/{pod.name}"
                if (tag := gke_build_tag(container.image)) and not stack_version(container.image):
                    where += f" ({GKE_BUILD_NOTE.format(tag=tag)})"  # why STACK-004 says unknown
                seen.setdefault(component, where)
    return seen


def _daemonsets(
    component: str,
    node: str,
    labels: Mapping[str, str],
    taints: tuple[Taint, ...],
    daemonsets: Iterable[Workload],
) -> tuple[list[str], list[tuple[str, bool | None, str]]]:
    """DaemonSets of the component that schedule on the node, and the others with why not."""
    fits: list[str] = []
    misses: list[tuple[str, bool | None, str]] = []
    for ds in daemonsets:
        if not any(container_component(n, i) == component for n, i in ds.images.items()):
            continue
        fit = workload_fit(node, labels, taints, ds)
        name = f"{ds.namespace}/{ds.name}"
        if fit.fits:
            fits.append(name)
        else:
            misses.append((name, fit.fits, fit.why))
    return fits, misses


def _absent(misses: list[tuple[str, bool | None, str]], daemonsets_read: bool = True) -> str:
    if not misses and not daemonsets_read:
        # No pod of it runs here (pods were read); a DaemonSet with no pod on the node yet
        # (Pending, just created) would be "deployed", but none could be seen.
        return (
            "no pod of it on the node; the snapshot holds no DaemonSets, so whether one would "
            "run here is not known"
        )
    if not misses:
        return "no pod of it on the node and no DaemonSet of it in the cluster"
    reasons = "; ".join(f"DaemonSet {name}: {why}" for name, _, why in misses)
    return f"no pod of it on the node, and its DaemonSet does not run here ({reasons})"
