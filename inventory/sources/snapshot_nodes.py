"""Each Node of a snapshot with what the rest of the snapshot says of it: its pods, the GPU
Operator's and the stack's versions, the sharing configs that apply, the defaults of the
ClusterPolicy. PURE. A node that cannot be read is skipped with a warning that names it."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from inventory.components import StackFacts, stack_facts
from inventory.dra_devices import DraIndex
from inventory.snapshot import (
    ConfigMap,
    GpuOperatorPolicy,
    Node,
    Pod,
    SharingConfig,
    UnreadableConfig,
    Workload,
)
from inventory.snapshot.accelerators import accelerator_counts
from inventory.sources.dra_sharing import dra_gpu_count, with_dra
from inventory.sources.dra_stack import with_slice_stack
from inventory.sources.gpu_signs import dra_accelerators, dra_signs
from inventory.sources.mig_single import MigSources, mig_single_gpus, mig_sources
from inventory.sources.node_kinds import mig_single_overrides, not_judged_warning, sandbox_default
from inventory.sources.node_versions import operator_version
from inventory.sources.nodes import NodeResult, node_from
from inventory.sources.quantity_warnings import node_quantity_warnings
from inventory.sources.raw import mapping, text


@dataclass(frozen=True)
class NodeReader:
    """What the whole cluster says of every node (the GPU Operator's version and defaults, the
    GPU stack, the sharing configs), read once; a full sync and a watch re-sync read each node
    through it, so the two never derive a node's facts differently."""

    operator: str | None
    stack: StackFacts
    sharing_configs: Sequence[SharingConfig]
    unreadable: Sequence[UnreadableConfig]
    plugin_default: str
    workload_default: str
    # The namespaces tenants claim: their pods never give a node its stack (node_from).
    tenant_claimed: frozenset[str]
    policies: tuple[tuple[str, Mapping[str, Any]], ...] = ()  # readable ClusterPolicies
    # The cluster's DRA claims and slices: how DRA shares each node's GPUs (dra_sharing).
    dra: DraIndex | None = None
    # The mig-parted configs held: a MIG single-strategy node's GPUs by its layout (mig_single).
    mig_parted: MigSources = MigSources()

    def read(self, raw: dict[str, Any], pods_on_node: Sequence[Pod]) -> NodeResult:
        result = node_from(
            raw,
            pods_on_node=pods_on_node,
            tenant_claimed=self.tenant_claimed,
            operator_version=self.operator,
            sharing_configs=self.sharing_configs,
            unreadable=self.unreadable,
            stack=self.stack,
            plugin_default=self.plugin_default,
            workload_default=self.workload_default,
            policies=self.policies,
            dra_gpus=dra_gpu_count(
                text(mapping(raw.get("metadata")).get("name"), "") or "", self.dra
            ),
        )
        node = result.node
        if node.gpu_count is None and mig_single_overrides(node.labels):
            # Only the node's own count: its nvidia.com/gpu (capacity, sharing) stay MIG devices.
            count, basis = mig_single_gpus(node.labels, self.mig_parted)
            result = replace(result, node=replace(node, gpu_count=count, gpu_count_basis=basis))
        capacity = mapping(mapping(raw.get("status")).get("capacity"))
        if found := accelerator_counts(capacity):
            result = replace(result, node=replace(result.node, accelerator_resources=found))
        if self.dra is None:
            return result
        node = with_slice_stack(with_dra(result.node, self.dra), self.dra)
        if node.gpu_signs is not None and (found := dra_signs(node.name, self.dra)):
            node = replace(node, gpu_signs=(*node.gpu_signs, *found))
        if others := dra_accelerators(node.name, self.dra):
            node = replace(node, dra_accelerators=others)
        return replace(result, node=node)


def node_reader(
    workloads: Sequence[Workload],
    operator_policies: Sequence[GpuOperatorPolicy],
    stack: StackFacts,
    sharing_configs: Sequence[SharingConfig],
    unreadable: Sequence[UnreadableConfig],
    dra: DraIndex | None = None,
    *,
    tenant_claimed: Collection[str],
    mig_parted: Iterable[ConfigMap] = (),
) -> NodeReader:
    """`mig_parted`: the mig-parted ConfigMaps kept, with their contents."""
    reads = {str(p.spec.get("mig_manager_config_name") or "") for p in operator_policies}
    return NodeReader(
        operator=operator_version(workloads, stack.operator_pod),
        stack=stack,
        sharing_configs=sharing_configs,
        unreadable=unreadable,
        plugin_default=plugin_config_default(operator_policies),
        workload_default=sandbox_default(p.spec for p in operator_policies if not p.error),
        tenant_claimed=frozenset(tenant_claimed),
        policies=tuple((p.name, p.spec) for p in operator_policies if not p.error),
        dra=dra,
        mig_parted=mig_sources(mig_parted, reads - {""}),
    )


def snapshot_nodes(
    raw_nodes: Iterable[dict[str, Any]],
    workloads: Sequence[Workload],
    operator_policies: Sequence[GpuOperatorPolicy],
    pods: Sequence[Pod],
    sharing_configs: list[SharingConfig],
    unreadable: list[UnreadableConfig],
    dra: DraIndex | None = None,
    *,
    tenant_claimed: Collection[str],
    mig_parted: Iterable[ConfigMap] = (),
    daemonsets_read: bool = True,
) -> tuple[list[Node], list[str]]:
    """The nodes read from `raw_nodes`, and the warnings of reading them; `dra`: the
    cluster's DRA objects, where it has any; `tenant_claimed`: the namespaces tenants claim;
    `mig_parted`: the mig-parted ConfigMaps kept; `daemonsets_read`: whether the read holds
    the cluster's DaemonSets (inventory.components.StackFacts)."""
    by_node: dict[str, list[Pod]] = {}
    for pod in pods:
        if pod.node_name:
            by_node.setdefault(pod.node_name, []).append(pod)
    stack = stack_facts(
        workloads,
        [p.name for p in operator_policies],
        pods,
        tenant_claimed=tenant_claimed,
        daemonsets_read=daemonsets_read,
    )
    reader = node_reader(
        workloads,
        operator_policies,
        stack,
        sharing_configs,
        unreadable,
        dra,
        tenant_claimed=tenant_claimed,
        mig_parted=mig_parted,
    )
    nodes: list[Node] = []
    warnings: list[str] = []
    others: dict[str, list[str]] = {}  # node -> accelerators of other vendors
    for raw in raw_nodes:
        name = text(mapping(raw.get("metadata")).get("name"), "") or ""
        try:
            result = reader.read(raw, by_node.get(name, []))
        except Exception as exc:  # noqa: BLE001 - as for any other object: skip, say why
            reason = f"{type(exc).__name__}: {exc}"[:300]
            warnings.append(f"Node {name} could not be read and was skipped: {reason}")
            continue
        nodes.append(result.node)
        warnings.extend(result.warnings)
        warnings.extend(node_quantity_warnings(name, raw.get("status")))
        if result.node.accelerator_resources:
            others[name] = list(result.node.accelerator_resources)
    if warning := not_judged_warning(others):
        warnings.append(warning)
    return nodes, warnings


def plugin_config_default(policies: Iterable[GpuOperatorPolicy]) -> str:
    """The device-plugin config an unlabelled node reads, as the GPU Operator's ClusterPolicy
    sets it (`devicePlugin.config.default`); "" when none does or two disagree."""
    defaults = {
        str(p.spec.get("device_plugin_config_default") or "") for p in policies if not p.error
    }
    return defaults.pop() if len(defaults) == 1 else ""
