"""Whether a device-plugin config is in force on a node. PURE.

A device-plugin ConfigMap changes nothing by existing: it reaches a node only through a device
plugin pod that mounts it (the standalone chart's `available-configs` volume, the GPU Operator's
plugin DaemonSet). A cluster often runs that plugin on one node group only, and other GPU nodes
run another plugin (Bottlerocket and other cloud GPU images run it as a host service), which never
reads the ConfigMap. So a config applies where a pod of a DaemonSet that mounts it runs, or would
run (its nodeSelector, required affinity and tolerations admit the node: inventory.placement);
where every such DaemonSet excludes the node, it does not apply. Where the snapshot holds no such
DaemonSet (or one whose affinity cannot be judged), where the plugin runs is not shown and the
config is assumed to apply, as before, and the node says so.

The node's capacity and GPU Feature Discovery's labels are further witnesses, whatever the
placement says: a config they contradict is unverified there (config_witness).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from inventory.placement import workload_fit
from inventory.snapshot import Pod, SharingConfig, Taint, UnreadableConfig, Workload
from inventory.sources.images import component_of, container_component
from inventory.visible_devices import Fact, device_list_strategy

PLACED, ASSUMED, ABSENT = "placed", "assumed", "absent"


@dataclass(frozen=True)
class Placement:
    state: str  # PLACED, ASSUMED or ABSENT
    why: str


def config_placement(
    namespace: str,
    configmap: str,
    node_name: str,
    labels: Mapping[str, str],
    taints: Iterable[Taint],
    pods_on_node: Iterable[Pod],
    daemonsets: Sequence[Workload],
) -> Placement:
    """Whether a plugin that reads the ConfigMap `namespace`/`configmap` runs (or would run) on
    the node."""
    where = f"{namespace}/{configmap}"
    readers = [
        ds
        for ds in daemonsets
        if ds.kind == "DaemonSet"
        and ds.namespace == namespace
        and configmap in ds.config_refs
        and any(component_of(i) == "device_plugin" for i in ds.images.values())
    ]
    names = {ds.name for ds in readers}
    for pod in pods_on_node:
        if (
            pod.is_active
            and pod.owner_kind == "DaemonSet"
            and pod.namespace == namespace
            and pod.owner_name in names
        ):
            why = f"pod {pod.namespace}/{pod.name} of DaemonSet {pod.owner_name} mounts {where}"
            return Placement(PLACED, why)
    if not readers:
        return Placement(
            ASSUMED,
            f"assumed: no device-plugin DaemonSet in the snapshot mounts {where}, so which nodes "
            "read it is not shown",
        )
    taints = tuple(taints)
    unsure, excluded = [], []
    for ds in sorted(readers, key=lambda d: d.name):
        fit = workload_fit(node_name, labels, taints, ds)
        name = f"DaemonSet {ds.namespace}/{ds.name}"
        if fit.fits:
            return Placement(PLACED, f"{name} mounts {where} and runs here")
        (unsure if fit.fits is None else excluded).append(f"{name}: {fit.why}")
    if unsure:
        return Placement(ASSUMED, f"assumed: {'; '.join(unsure)}")
    return Placement(
        ABSENT,
        f"no device plugin that mounts {where} runs on the node ({'; '.join(excluded)})",
    )


def placed_problems(
    problems: Iterable[UnreadableConfig],
    node_name: str,
    labels: Mapping[str, str],
    taints: Iterable[Taint],
    pods_on_node: Sequence[Pod],
    daemonsets: Sequence[Workload],
) -> tuple[UnreadableConfig, ...]:
    """The problems without an unreadable device-plugin ConfigMap no plugin on the node reads:
    what it says cannot make this node's sharing unknown."""
    taints = tuple(taints)
    return tuple(
        p
        for p in problems
        if not (p.purpose == "device_plugin" and p.kind == "ConfigMap")
        or config_placement(
            p.namespace, p.name, node_name, labels, taints, pods_on_node, daemonsets
        ).state
        != ABSENT
    )


def plugin_templates(
    node_name: str,
    labels: Mapping[str, str],
    taints: Iterable[Taint],
    daemonsets: Sequence[Workload],
) -> list[Pod]:
    """The pod templates of the device-plugin DaemonSets that should run on the node: what its
    plugin runs with where the snapshot holds no pod of it."""
    taints = tuple(taints)
    return [
        ds.template
        for ds in sorted(daemonsets, key=lambda d: (d.namespace, d.name))
        if ds.template is not None
        and any(component_of(i) == "device_plugin" for i in ds.images.values())
        and workload_fit(node_name, labels, taints, ds).fits
    ]


OPERATOR_DEPLOY_LABEL = "nvidia.com/gpu.deploy.device-plugin"
TOOLKIT_DEPLOY_LABEL = "nvidia.com/gpu.deploy.container-toolkit"


def operator_plugin_here(
    node_name: str,
    labels: Mapping[str, str],
    taints: Iterable[Taint],
    pods_on_node: Iterable[Pod],
    daemonsets: Sequence[Workload],
) -> bool:
    """Whether the GPU Operator's device plugin runs (or would run) on the node, so that the
    ClusterPolicy's `devicePlugin` settings are the plugin's there. The Operator's plugin
    DaemonSet selects nodes by its deploy label (`nvidia.com/gpu.deploy.device-plugin: "true"`,
    which it writes on the GPU nodes it manages); a node running another plugin (its own chart,
    a host service) never reads the ClusterPolicy."""
    found = _operator_component_here(
        "device_plugin", OPERATOR_DEPLOY_LABEL, node_name, labels, taints, pods_on_node, daemonsets
    )
    return bool(found)


def operator_toolkit_here(
    node_name: str,
    labels: Mapping[str, str],
    taints: Iterable[Taint],
    pods_on_node: Iterable[Pod],
    daemonsets: Sequence[Workload],
    operator: str | None = None,
) -> bool:
    """Whether the GPU Operator's container toolkit runs (or would run) on the node, so that the
    ClusterPolicy's `cdi` and `toolkit` settings configure its container runtime. Its toolkit
    DaemonSet selects nodes by `nvidia.com/gpu.deploy.container-toolkit: "true"`; a node with a
    pre-installed toolkit (cloud GPU images) or another plugin's stack never reads them. With only
    the ClusterPolicy read, the deploy labels decide: the Operator writes its toolkit and plugin
    labels together on the nodes it manages, so a node wearing neither is not its own.
    `operator` is where the Operator was seen (StackFacts.operator): a toolkit pod running on
    the node from a DaemonSet in the Operator's namespace is its toolkit, whatever that
    DaemonSet's nodeSelector (an older or hand-edited spec, or a snapshot without it)."""
    namespace = operator_namespace(operator)
    if namespace and any(
        p.is_active
        and p.owner_kind == "DaemonSet"
        and p.namespace == namespace
        and any(
            container_component(c.name, c.image, c.command) == "container_toolkit"
            for c in p.containers
        )
        for p in pods_on_node
    ):
        return True
    found = _operator_component_here(
        "container_toolkit",
        TOOLKIT_DEPLOY_LABEL,
        node_name,
        labels,
        taints,
        pods_on_node,
        daemonsets,
    )
    if found is None:  # no toolkit DaemonSet in the snapshot: the deploy labels
        label = labels.get(TOOLKIT_DEPLOY_LABEL)
        if label is not None:
            return label.strip().lower() == "true"
        return operator_plugin_here(node_name, labels, taints, pods_on_node, daemonsets)
    return found


def operator_namespace(operator: str | None) -> str | None:
    """The namespace of the GPU Operator as StackFacts.operator names where it was seen
    ("Deployment ns/name" or "pod ns/name"); None where only its ClusterPolicy (cluster-scoped)
    or nothing was seen."""
    kind, _, where = (operator or "").partition(" ")
    if kind not in ("Deployment", "pod") or "/" not in where:
        return None
    return where.partition("/")[0] or None


def _operator_component_here(
    component: str,
    deploy_label: str,
    node_name: str,
    labels: Mapping[str, str],
    taints: Iterable[Taint],
    pods_on_node: Iterable[Pod],
    daemonsets: Sequence[Workload],
) -> bool | None:
    """Whether the Operator's DaemonSet of `component` (selecting nodes by `deploy_label`) runs
    or would run on the node; for the device plugin with no such DaemonSet in the snapshot, the
    node's deploy label; None for another component with no such DaemonSet (caller decides)."""
    operator = [
        ds
        for ds in daemonsets
        if ds.kind == "DaemonSet"
        and deploy_label in ds.node_selector
        and any(component_of(i) == component for i in ds.images.values())
    ]
    names = {(ds.namespace, ds.name) for ds in operator}
    running = [
        p
        for p in pods_on_node
        if p.is_active
        # GFD runs the plugin's image: container_component tells it apart.
        and any(container_component(c.name, c.image, c.command) == component for c in p.containers)
    ]
    if any(p.owner_kind == "DaemonSet" and (p.namespace, p.owner_name) in names for p in running):
        return True
    spaces = {ds.namespace for ds in operator}  # its operands (MPS daemon, GFD) live there
    if any(p.namespace not in spaces for p in running) and operator:
        return False  # another plugin's (toolkit's) pod runs here
    if not operator:  # only its ClusterPolicy was read: the deploy label says where it runs
        if component != "device_plugin":
            return None
        return labels.get(deploy_label, "").strip().lower() == "true"
    taints = tuple(taints)
    return any(workload_fit(node_name, labels, taints, ds).fits for ds in operator)


def plugin_strategy_here(
    name: str,
    labels: Mapping[str, str],
    taints: tuple[Taint, ...],
    pods_on_node: Sequence[Pod],
    daemonsets: Sequence[Workload],
    config: SharingConfig | None,
    policies: Sequence[tuple[str, Mapping[str, Any]]],
    plugin_unknown: bool,
) -> Fact:
    """The node's device-list strategy. The ClusterPolicy's devicePlugin settings (its env,
    cdi.enabled) are the plugin's only where the GPU Operator's plugin runs; elsewhere (a
    host-run plugin, another chart's) they say nothing of the node."""
    operator = operator_plugin_here(name, labels, taints, pods_on_node, daemonsets)
    applied = [
        (n, spec)
        for n, spec in policies
        if operator and spec.get("device_plugin_enabled") is not False
    ]
    fact = device_list_strategy(
        pods_on_node,
        None if plugin_unknown else config,
        applied,
        config_unreadable=plugin_unknown,
        templates=plugin_templates(name, labels, taints, daemonsets),
    )
    if fact.value is None and policies and not applied:
        names = ", ".join(sorted(n for n, _ in policies))
        return Fact(
            None,
            f"{fact.source}; ClusterPolicy {names} does not set it here: the GPU Operator's "
            "device plugin does not run on the node",
        )
    return fact
