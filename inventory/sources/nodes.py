"""Node objects -> snapshot Nodes: the GPU host stack and how the node shares its GPUs.

Facts come from GPU Feature Discovery labels first, then from a managed cloud's own labels
(cloud_labels.py: GKE, Karpenter, EKS), then from the image tags of the GPU-stack pods on the
node. A fact no source states stays None (unknown), so STACK-004 can say so.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from inventory.components import StackFacts, presence
from inventory.snapshot import (
    CAPACITY_KIND,
    GpuOperatorPolicy,
    Node,
    Pod,
    SharedResource,
    SharingConfig,
    UnreadableConfig,
)
from inventory.sources.capacity_split import capacity_split
from inventory.sources.cloud_labels import (
    cloud_or_instance_model,
    gke_partition_size,
    gke_shares,
)
from inventory.sources.config_witness import config_contradiction
from inventory.sources.fractional_nodes import scheduler_sharing
from inventory.sources.gpu_signs import gpu_signs
from inventory.sources.node_fallback import agreed_fallback
from inventory.sources.node_fields import gpu_quantities, node_taints, product_model
from inventory.sources.node_kinds import (
    PASSTHROUGH,
    SANDBOX_SHARING,
    gpu_capacity_of,
    passthrough_model,
    plugin_resources,
    sandbox_absent,
    sandbox_gpus,
    sandbox_plugin_note,
    sandbox_workload,
    vfio_gpus_beside,
)
from inventory.sources.node_labels import (
    missing_plugin_config,
    unreadable_labels,
)
from inventory.sources.node_sharing import (
    MIG_CONFIG,
    NV,
    PRODUCT,
    SHARING,
    node_mig_strategy,
    node_replicas,
    physical_gpus,
    sharing_strategy,
)
from inventory.sources.node_versions import stack_versions
from inventory.sources.nvidia_runtime import nvidia_runtime_pods, runtime_count_basis
from inventory.sources.plugin_config import (
    config_basis,
    file_config,
    matching_config,
    unreadable_for,
)
from inventory.sources.plugin_file import MANAGED, bare_checked, plugin_reading
from inventory.sources.plugin_placement import (
    ABSENT,
    ASSUMED,
    config_placement,
    operator_namespace,
    operator_plugin_here,
    operator_toolkit_here,
    placed_problems,
    plugin_strategy_here,
    plugin_templates,
)
from inventory.sources.plugin_reach import plugin_absent
from inventory.sources.raw import created_of, dig, labels_of, name_of, text, uid_of
from inventory.sources.shared_resources import replicates_here, shared_resources
from inventory.stack_managers import upgraded_by
from inventory.visible_devices import (
    config_manager_env,
    plugin_setting,
)

MIG_STATE = NV + "mig.config.state"
PLUGIN_CONFIG = NV + "device-plugin.config"


@dataclass(frozen=True)
class NodeResult:
    node: Node
    warnings: tuple[str, ...] = ()


def node_from(
    obj: dict[str, Any],
    *,
    pods_on_node: Sequence[Pod],
    tenant_claimed: Collection[str],
    operator_version: str | None,
    sharing_configs: Sequence[SharingConfig],
    unreadable: Sequence[UnreadableConfig] = (),
    stack: StackFacts | None = None,
    plugin_default: str = "",
    workload_default: str = "",
    policies: Sequence[tuple[str, Mapping[str, Any]]] = (),
    dra_gpus: tuple[int, str] | None = None,
) -> NodeResult:
    """One Node object, with the pods scheduled on it, the cluster's sharing configs, the
    GPU configuration that could not be read and what the cluster shows of its GPU stack
    (`stack`; without it no component is ever said to be not installed). `plugin_default` is
    the config the plugin reads when the node has no label (the ClusterPolicy's
    `devicePlugin.config.default`), "" when nothing sets one; `workload_default` the workload of
    a node with no `nvidia.com/gpu.workload.config` (`sandboxWorkloads.defaultWorkload`);
    `policies` the readable ClusterPolicies (name, parsed spec); `dra_gpus` the (count, basis)
    of the GPUs DRA ResourceSlices publish for it (dra_sharing.dra_gpu_count); `tenant_claimed`
    the namespaces tenants claim (the registry's and those labelled for a tenant)."""
    labels = labels_of(obj)
    # A tenant's pod never gives the node its GPU stack: one running the driver's image must not
    # make the node look patched (DESIGN §2, tenants are untrusted); other checks still judge
    # it. Pods of namespaces no tenant claims do (DESIGN §7: "the GPU Operator driver pod on
    # that node"; a snapshot without its DaemonSet leaves its namespace unplaced, not a tenant's).
    # Nor its settings: the plugin's strategies and config, whether the Operator's runs here.
    stack_pods = [p for p in pods_on_node if p.namespace not in tenant_claimed]
    stack_sets = [d for d in stack.daemonsets if d.namespace not in tenant_claimed] if stack else []
    taints = node_taints(dig(obj, "spec").get("taints"))
    templates = plugin_templates(name_of(obj), labels, taints, stack_sets)
    # The device plugin's config-manager: the node's label, else its DEFAULT_CONFIG (the
    # standalone chart's config.default), else the ClusterPolicy's default. A plugin seen to
    # run without config-manager reads its one mounted file, or none, and never the label
    # (plugin_file): it is given no sharing the label names.
    manager = config_manager_env(stack_pods, templates, "DEFAULT_CONFIG")
    default_from = ("DaemonSet", manager.namespace, manager.daemonset) if manager else None
    named = labels.get(PLUGIN_CONFIG) or (manager.value if manager else plugin_default) or None
    daemonsets = stack.daemonsets if stack else ()
    # The GPU Operator's plugin runs config-manager whenever a ClusterPolicy gives it configs.
    operator = operator_plugin_here(name_of(obj), labels, taints, stack_pods, daemonsets)
    # Any name a sharing config of the cluster advertises (a rename) is a GPU resource.
    advertised = [r.name for c in sharing_configs for r in shared_resources(c, {}, None)]
    # nvidia.com/ resources that are not GPUs (the Network Operator's NICs) make no GPU node.
    capacity = gpu_capacity_of(
        gpu_quantities(dig(obj, "status").get("capacity")), labels, advertised
    )
    reading = (
        MANAGED
        if operator
        else bare_checked(
            plugin_reading(
                stack_pods, templates, operator_namespace(stack.operator if stack else None)
            ),
            labels,
            capacity,
        )
    )
    file, ignored = reading.file, reading.label_read is False
    config, warning = matching_config(named, sharing_configs) if not ignored else (None, None)
    file_problems: tuple[UnreadableConfig, ...] = ()
    if file is not None:
        config, file_problems = file_config(file, sharing_configs, unreadable)
    gpu_count = physical_gpus(labels, capacity)  # capacity is multiplied by sharing
    # A DRA node has no nvidia.com/gpu capacity: its ResourceSlices count its GPUs.
    gpu_count, count_from = (
        dra_gpus if gpu_count is None and dra_gpus is not None else (gpu_count, "")
    )
    is_gpu = bool(gpu_count) or any(v > 0 for v in capacity.values())
    # No device plugin, no GFD, yet pods run under NVIDIA's runtime (k3s on a Jetson): a GPU
    # node of unknown model and count. Any pod shows it, a tenant's too: it can only make the
    # node judged (unknown, its pods' access reported), never look patched.
    runtime = () if is_gpu else nvidia_runtime_pods(pods_on_node)
    if runtime:
        is_gpu, count_from = True, runtime_count_basis(runtime)
    # A CPU node takes no sharing mode from a cluster-wide config, nor does a node whose
    # sharing GKE's own device plugin runs (it reads its labels, never NVIDIA's ConfigMap), nor
    # a node whose GPUs go to VMs (the operator's sandbox device plugin reads no config).
    gke = gke_shares(labels)
    # A pod running under NVIDIA's container runtime shows the GPUs are not given to VMs.
    vm = sandbox_workload(labels, workload_default, capacity) if is_gpu and not runtime else None
    gpu_count, count_basis = sandbox_gpus(vm, gpu_count, labels, capacity)
    # GPUs bound to vfio-pci beside the driver's: in the node's count, never in its pools'.
    vfio, vfio_basis = vfio_gpus_beside(vm, gpu_count, labels, capacity)
    count_basis = vfio_basis or count_basis or count_from
    config = config if is_gpu and not gke and not vm else None
    # One matched without the ClusterPolicy never makes the node share by itself.
    config, fallback_basis = agreed_fallback(config, labels, capacity)
    # A node no device plugin serves (a DRA node) reads no plugin config, not even the only key
    # a plugin would fall back to: its GPUs reach pods by what does serve them (DRA claims).
    absent = (
        plugin_absent(
            name_of(obj),
            labels,
            taints,
            pods_on_node,
            daemonsets,
            operator_namespace(stack.operator),
            capacity,
        )
        if is_gpu and stack is not None
        else ""
    )
    if absent:
        fallback_basis = f"no device-plugin config applies: {absent}" if config else ""
        config, warning = None, None
    # A config reaches the node only through a plugin pod that mounts it (plugin_placement).
    placement = (
        config_placement(
            config.namespace,
            config.configmap,
            name_of(obj),
            labels,
            taints,
            pods_on_node,
            stack.daemonsets,
        )
        if config is not None and stack is not None
        else None
    )
    if placement is not None and placement.state == ABSENT:
        config = None
    problems = unreadable_for(labels, sharing_configs, unreadable, named) if is_gpu else ()
    if ignored and is_gpu:  # the file's config (or none), not the label's, is the plugin's
        problems = tuple(p for p in problems if p.purpose != "device_plugin") + file_problems
    if stack is not None:
        problems = placed_problems(
            problems, name_of(obj), labels, taints, pods_on_node, stack.daemonsets
        )
    if absent:  # what no plugin reads cannot make the node's sharing unknown
        problems = tuple(p for p in problems if p.purpose != "device_plugin")
    # The node's capacity or GFD's labels say the config is not in force: sharing unverified.
    conflict = config_contradiction(config, labels, capacity, gpu_count) if stack else None
    problems += (conflict,) if conflict is not None else ()
    if vm:
        problems = tuple(p for p in problems if p.purpose != "device_plugin")
    if is_gpu and not gke and not vm and not ignored and not absent:
        problems += missing_plugin_config(
            labels, sharing_configs, unreadable, named or "", default_from=default_from
        )
    if is_gpu or labels.get(NV + "gpu.present") == "true":
        problems += unreadable_labels(labels)
    # The plugin's MIG strategy (GKE's own plugin and the sandbox one have none to read).
    plugin_mig = (
        plugin_setting(stack_pods, templates, "--mig-strategy", "MIG_STRATEGY")
        if is_gpu and not gke and not vm
        else None
    )
    # More nvidia.com/gpu than GPUs with no GFD label saying how: the plugin's MIG strategy.
    split = (
        capacity_split(labels, capacity, gpu_count, config, plugin_mig)
        if is_gpu and not gke and not vm
        else None
    )
    if split is not None and split.problem is not None:
        problems += (split.problem,)
    plugin_unknown = any(p.purpose == "device_plugin" for p in problems)
    config_unknown = any(p.purpose == "device_plugin" and p.kind != CAPACITY_KIND for p in problems)
    info = dig(obj, "status", "nodeInfo")
    offered = plugin_resources(
        capacity, gpu_quantities(dig(obj, "status").get("allocatable")), advertised
    )
    deployed, not_installed = (
        presence(
            name_of(obj),
            labels,
            taints,
            pods_on_node,
            stack,
            offered,
            stack_pods=stack_pods,
            os_image=text(info.get("osImage")),
        )
        if is_gpu and stack is not None
        else ({}, {})
    )
    if vm and is_gpu:
        not_installed = {**sandbox_absent(vm), **not_installed}
        if "device_plugin" in not_installed and (note := sandbox_plugin_note(pods_on_node)):
            not_installed["device_plugin"] = note
    # The node's own sharing: only from entries that replicate something it has.
    node_config = config if config is not None and replicates_here(config, capacity) else None
    strategy = (
        SANDBOX_SHARING[vm]
        if vm
        else (split.sharing if split is not None and split.sharing == "mig" else None)
        or sharing_strategy(labels, capacity, node_config, config_unknown=plugin_unknown)
    )
    # HAMi shares GPUs GFD calls unshared: time-slicing (DESIGN §2), as the checks judge its
    # pods' holdings (KAI's fractions share only their reservation's GPU: fractional_nodes).
    annotations = dig(obj, "metadata").get("annotations") or {}
    shares = (strategy, bool(labels.get(SHARING)), annotations, pods_on_node, gpu_count)
    fractional = scheduler_sharing(*shares) if is_gpu else None
    inferred_replicas = strategy == "time_slicing"  # the capacity's surplus counts them
    if fractional is not None:
        strategy = "time_slicing"
    strategy_fact = (
        # The capacity's unknown split leaves the config readable: only a config decides here.
        plugin_strategy_here(
            name_of(obj),
            labels,
            taints,
            stack_pods,
            stack_sets,
            config,
            policies,
            config_unknown,
        )
        if is_gpu and stack is not None and not vm
        else None
    )
    node = Node(
        name=name_of(obj),
        uid=uid_of(obj),
        created=created_of(obj),
        labels=labels,
        taints=taints,
        gpu_capacity=capacity,
        # GFD's product, else the cloud's label (made specific by the instance type), else
        # what the instance type fixes, else a passthrough GPU's PCI device name.
        gpu_model=product_model(labels.get(PRODUCT))
        or cloud_or_instance_model(labels)
        or (passthrough_model(capacity) if vm == PASSTHROUGH else None),
        gpu_count=gpu_count + vfio if gpu_count is not None else None,
        gpu_count_basis=count_basis,
        passthrough_gpus=vfio,
        # The Operator's version is the node's only where it manages the node (presence).
        gpu_operator_version=(
            operator_version if is_gpu and "gpu_operator" not in not_installed else None
        ),
        firmware_version=None,  # the API does not report it; nvidia-smi XML does
        sharing_strategy=strategy,
        sharing_basis="; ".join(
            b
            for b in (
                fractional.basis if fractional else "",
                fallback_basis,
                conflict.error if conflict is not None else "",
                config_basis(reading, labels.get(PLUGIN_CONFIG), config, plugin_mig)
                if is_gpu and not gke and not vm
                else "",
            )
            if b
        ),
        time_slicing_replicas=(
            fractional.replicas
            if fractional and not (inferred_replicas and fractional.replicas is None)
            else None
            if vm or split is not None
            else node_replicas(labels, capacity, None if plugin_unknown else node_config)
        ),
        mig_strategy=node_mig_strategy(
            labels,
            capacity,
            (config.mig_strategy if config is not None else None)
            or (plugin_mig.value if plugin_mig else None),
        ),
        # GKE's partition size where GKE partitions the GPUs: the layout, not a mig-parted name.
        mig_config=labels.get(MIG_CONFIG) or (gke_partition_size(labels) if gke else None),
        mig_config_state=labels.get(MIG_STATE),
        device_plugin_config=labels.get(PLUGIN_CONFIG),
        device_plugin_config_used=config.ref if config is not None else "",
        device_plugin_label_read=reading.label_read if is_gpu and not gke and not vm else None,
        device_list_strategy=strategy_fact.value if strategy_fact else None,
        device_list_strategy_source=strategy_fact.source if strategy_fact else "",
        operator_toolkit=(
            operator_toolkit_here(
                name_of(obj), labels, taints, stack_pods, stack.daemonsets, stack.operator
            )
            if is_gpu and stack is not None
            else None
        ),
        resource_sharing=_noted(
            shared_resources(None if plugin_unknown else config, capacity, gpu_count),
            placement.why if placement is not None and placement.state == ASSUMED else "",
        ),
        os_image=text(info.get("osImage")),
        kernel_version=text(info.get("kernelVersion")),
        container_runtime=text(info.get("containerRuntimeVersion")),
        kubelet_version=text(info.get("kubeletVersion")),
        unreadable_configs=problems,
        deployed=deployed,
        not_installed=not_installed,
        gpu_signs=None if is_gpu else gpu_signs(labels, dig(obj, "status"), pods_on_node),
        nvidia_runtime=runtime,
        **stack_versions(labels, stack_pods),
    )
    if is_gpu:  # who upgrades each component, for the node and patch pages
        read = [GpuOperatorPolicy(name, spec=dict(spec)) for name, spec in policies]
        node = replace(node, upgrade_by=upgraded_by(node, read, stack_pods))
    return NodeResult(node, (warning,) if warning else ())


def _noted(resources: tuple[SharedResource, ...], note: str) -> tuple[SharedResource, ...]:
    """The resources with `note` added to what each says of how the node bears it out."""
    if not note:
        return resources
    return tuple(replace(r, note=f"{r.note}; {note}" if r.note else note) for r in resources)
