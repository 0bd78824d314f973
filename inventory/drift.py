"""What changed between two successful syncs, for the DRIFT- checks. PURE.

DRIFT-001: time-slicing / MPS / MIG configuration (device-plugin configs, mig-parted configs,
a GPU node's sharing facts). DRIFT-002: a device plugin or GPU Operator controller's pod spec.
DRIFT-003: other GPU node labels and taints. DRIFT-006: RBAC reaching the GPU stack (a new
binding of its service accounts, a new subject with node-label rights; inventory/drift_rbac.py).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, replace
from typing import Any

from inventory import snapshot as snap
from inventory.drift_causes import without_restated
from inventory.drift_change import DriftChange as DriftChange  # re-exported: callers import it here
from inventory.drift_configs import mig_config_changes, sharing_config_changes
from inventory.drift_labels import class_taints, label_taint_diff, plugin_label_unread
from inventory.drift_rbac import RbacState, detect_rbac_drift
from inventory.drift_workloads import template_changes, workload_view
from inventory.pools import node_pool
from tenants.pool_taints import PoolTaintRules

# The checks a drift event carries (`?check=` on /api/v1/drift-events/ accepts these);
# DRIFT-004 and DRIFT-005 compare approvals and admission packs, not two syncs.
DRIFT_CHECK_IDS = ("DRIFT-001", "DRIFT-002", "DRIFT-003", "DRIFT-006")

# Node facts that are the sharing configuration itself (reported as DRIFT-001, not DRIFT-003).
# device_plugin_config is compared as the config in force (_fact), not the node's label.
SHARING_FACTS = (
    "sharing_strategy",
    "time_slicing_replicas",
    "mig_strategy",
    "mig_config",
    "device_plugin_config",
)
GPU_COMPONENT_REPOS = (
    "k8s-device-plugin",
    "gpu-operator",
    "container-toolkit",
    "k8s-container-toolkit",
    "driver",
    "dcgm-exporter",
    "k8s-mig-manager",
    "gpu-feature-discovery",
    "k8s-driver-manager",
    "gpu-operator-validator",
    "k8s-dra-driver-gpu",  # the DRA driver's controller is a Deployment
    "k8s-dra-driver",
)


@dataclass(frozen=True)
class ClusterState:
    """The parts of a snapshot drift compares."""

    nodes: tuple[snap.Node, ...] = ()
    sharing_configs: tuple[snap.SharingConfig, ...] = ()
    configmaps: tuple[snap.ConfigMap, ...] = ()
    workloads: tuple[snap.Workload, ...] = ()
    operator_policies: tuple[snap.GpuOperatorPolicy, ...] = ()
    # ClusterRoles (what node rights a ClusterRoleBinding gives) and every binding.
    roles: tuple[snap.Role, ...] = ()
    bindings: tuple[snap.RoleBinding, ...] = ()


def gpu_config_within(state: ClusterState, namespaces: Collection[str]) -> ClusterState:
    """The state with only the GPU configuration in `namespaces` (the platform's): a ConfigMap
    elsewhere is never GPU configuration, so one stored before that rule leaving is no drift."""
    return replace(
        state,
        sharing_configs=tuple(c for c in state.sharing_configs if c.namespace in namespaces),
        configmaps=tuple(c for c in state.configmaps if c.namespace in namespaces),
    )


def detect_drift(
    before: ClusterState, after: ClusterState, rules: PoolTaintRules | None = None
) -> list[DriftChange]:
    """`rules`: which taints mark a class pool (tenants.selectors.pool_taint_rules; the
    default keys and seed classes without)."""
    changes = [
        *_node_changes(before.nodes, after.nodes, rules or PoolTaintRules()),
        *sharing_config_changes(
            before.sharing_configs, after.sharing_configs, after.nodes, before.nodes
        ),
        *mig_config_changes(before.configmaps, after.configmaps, after.nodes),
        *_component_changes(before.workloads, after.workloads),
        *_operator_policy_changes(before.operator_policies, after.operator_policies),
        *_rbac_changes(before, after),
    ]
    # One cause, one finding: a node that changed only by the config it reads is in its change.
    changes = without_restated(changes, {n.name for n in before.nodes})
    return sorted(changes, key=lambda c: (c.check_id, c.subject_namespace, c.subject_name))


def _node_changes(
    before: Iterable[snap.Node], after: Iterable[snap.Node], rules: PoolTaintRules
) -> list[DriftChange]:
    previous = {n.name: n for n in before}
    pools = _pool_sharing(previous.values())
    pool_taints = _pool_class_taints(previous.values(), rules)
    changes = []
    for node in after:
        old = previous.get(node.name)
        if old is None:
            changes.extend(_replacement_change(node, pools))
            changes.extend(_replacement_taints(node, pool_taints, rules))
            continue
        if not (node.is_gpu_node or old.is_gpu_node):
            continue
        facts_before, after_facts = _changed_facts(old, node)
        if facts_before:
            title = f"sharing configuration of GPU node {node.name} changed: "
            changes.append(
                _sharing_change(
                    node, title + ", ".join(sorted(facts_before)), facts_before, after_facts
                )
            )
        diff = label_taint_diff(old, node)
        if diff:
            changes.append(
                DriftChange(
                    "node",
                    "DRIFT-003",
                    "Node",
                    "",
                    node.name,
                    f"labels or taints of GPU node {node.name} changed",
                    before=diff["before"],
                    after=diff["after"],
                    nodes=(node.name,),
                )
            )
    return changes


Facts = tuple[Any, ...]  # a node's SHARING_FACTS, in order
PLUGIN_CONFIG, PLUGIN_LABEL = "device_plugin_config", "device_plugin_config_label"


def _fact(node: snap.Node, name: str, by_label: bool = False) -> Any:
    """One of the node's SHARING_FACTS. device_plugin_config is the config in force as the sync
    resolved it (`ns/map:key`, None for none): a plugin with no config-manager ignores the
    node's label, so a stale label flip there changes nothing in force. `by_label`: the label's
    value, for a node on either side stored before the config in force was recorded."""
    if name != PLUGIN_CONFIG:
        return getattr(node, name)
    if by_label or node.device_plugin_config_used is None:
        return node.device_plugin_config
    return node.device_plugin_config_used or None


def _changed_facts(old: snap.Node, new: snap.Node) -> tuple[dict[str, Any], dict[str, Any]]:
    """The SHARING_FACTS that differ, before and after. Where config-manager reads the label
    (or what reads it is not shown) a label change with the same config in force (two keys the
    ConfigMap lacks) is still a change of what the node is told to share by."""
    legacy = old.device_plugin_config_used is None or new.device_plugin_config_used is None
    before = {k: _fact(old, k, legacy) for k in SHARING_FACTS}
    after = {k: _fact(new, k, legacy) for k in SHARING_FACTS}
    if not legacy and not plugin_label_unread(old, new):
        before[PLUGIN_LABEL] = old.device_plugin_config
        after[PLUGIN_LABEL] = new.device_plugin_config
    changed = [k for k in before if before[k] != after[k]]
    if PLUGIN_CONFIG in changed and PLUGIN_LABEL in changed:
        changed.remove(PLUGIN_LABEL)  # the config in force says it; the label only named it
    return {k: before[k] for k in changed}, {k: after[k] for k in changed}


def _sharing_facts(node: snap.Node, by_label: bool = False) -> Facts:
    return tuple(_fact(node, k, by_label) for k in SHARING_FACTS)


# (node pool, by label) -> the sharing configurations its GPU nodes had; by label True also
# keys a pool with a node stored before the config in force was recorded (under (pool, None)).
Pools = dict[tuple[str, bool | None], set[Facts]]


def _pool_sharing(nodes: Iterable[snap.Node]) -> Pools:
    """Node pool -> the sharing configurations its GPU nodes had, by the config in force and
    by the label (compared so where a node on either side did not record the config in force)."""
    found: Pools = {}
    for node in nodes:
        if node.is_gpu_node and (pool := node_pool(node.labels)):
            found.setdefault((pool, False), set()).add(_sharing_facts(node))
            found.setdefault((pool, True), set()).add(_sharing_facts(node, True))
            if node.device_plugin_config_used is None:
                found[(pool, None)] = set()
    return found


def _replacement_change(node: snap.Node, pools: Pools) -> list[DriftChange]:
    """An autoscaler replaces a pool's nodes under new names, so a new node is compared with
    the nodes its pool had: a pool whose template now sets another device-plugin config or MIG
    layout shares its GPUs differently though no node was relabelled. Only a pool whose earlier
    GPU nodes agreed is compared (a mixed pool says nothing about what a new node should be),
    and only facts the new node has: one GFD or the plugin has not labelled yet reads as
    unshared, which is not known to differ (and would be stronger isolation, not weaker), and
    one whose config could not be read ("unknown") is STACK-007's, not a known change."""
    pool = node_pool(node.labels)
    by_label = node.device_plugin_config_used is None or (pool, None) in pools
    earlier = pools.get((pool, by_label), set()) if node.is_gpu_node and pool else set()
    if len(earlier) != 1:
        return []
    [was] = earlier
    now = _sharing_facts(node, by_label)
    fields = [
        k
        for k, a, b in zip(SHARING_FACTS, was, now, strict=True)
        if b not in (None, "none", "unknown") and a != b
    ]
    if not fields:
        return []
    title = (
        f"GPU node {node.name} joined node pool {pool} with another sharing configuration "
        f"than the pool's earlier nodes: {', '.join(sorted(fields))}"
    )
    before = {"node_pool": pool, **{k: was[SHARING_FACTS.index(k)] for k in fields}}
    after = {"node_pool": pool, **{k: now[SHARING_FACTS.index(k)] for k in fields}}
    return [_sharing_change(node, title, before, after)]


def _pool_class_taints(
    nodes: Iterable[snap.Node], rules: PoolTaintRules
) -> dict[str, frozenset[str]]:
    """Node pool -> the class-pool taints every one of its earlier GPU nodes carried (a taint
    some of them lacked says nothing about what a new node should carry)."""
    found: dict[str, frozenset[str]] = {}
    for node in nodes:
        if node.is_gpu_node and (pool := node_pool(node.labels)):
            taints = class_taints(node, rules)
            found[pool] = found[pool] & taints if pool in found else taints
    return found


def _replacement_taints(
    node: snap.Node, pools: dict[str, frozenset[str]], rules: PoolTaintRules
) -> list[DriftChange]:
    """DRIFT-003 for a GPU node that joined a class pool (an autoscaler's replacement under a
    new name) without a class taint the pool's earlier nodes all had: the pool's template lost
    it, and tenants of other classes may now land there (K8S-002 states it; this dates it)."""
    pool = node_pool(node.labels)
    agreed = pools.get(pool, frozenset()) if node.is_gpu_node and pool else frozenset()
    has = class_taints(node, rules)
    missing = sorted(agreed - has)
    if not missing:
        return []
    title = (
        f"GPU node {node.name} joined node pool {pool} without the "
        f"{'taint' if len(missing) == 1 else 'taints'} {', '.join(missing)} its earlier nodes had"
    )
    return [
        DriftChange(
            "node",
            "DRIFT-003",
            "Node",
            "",
            node.name,
            title,
            before={"node_pool": pool, "taints": sorted(agreed)},
            after={"node_pool": pool, "taints": sorted(has)},
            nodes=(node.name,),
        )
    ]


def _sharing_change(
    node: snap.Node, title: str, before: dict[str, Any], after: dict[str, Any]
) -> DriftChange:
    """DRIFT-001 on one GPU node: how it shares its GPUs differs from before."""
    return DriftChange(
        "sharing_config",
        "DRIFT-001",
        "Node",
        "",
        node.name,
        title,
        before=before,
        after=after,
        nodes=(node.name,),
    )


def is_gpu_component(workload: snap.Workload) -> bool:
    """A workload of the GPU stack: one running a component's image, or a DaemonSet named
    `nvidia-*` (the GPU Operator's operands: validators, the sandbox and CC managers run
    images no list can keep up with). A tenant's Deployment or Job named `nvidia-triton` or
    `nvidia-smi-check` running its own image is the tenant's, not the stack's: taking it
    would report its rollouts as DRIFT-002 and make its namespace's service accounts the
    GPU stack's (DRIFT-006, K8S-005)."""
    repos = [
        image.split("@")[0].rsplit(":", 1)[0].rsplit("/", 1)[-1]
        for image in workload.images.values()
    ]
    if any(repo in GPU_COMPONENT_REPOS for repo in repos):
        return True
    return workload.kind == "DaemonSet" and "nvidia" in workload.name


def _component_changes(
    before: Iterable[snap.Workload], after: Iterable[snap.Workload]
) -> list[DriftChange]:
    old = {(w.kind, w.namespace, w.name): w for w in before if is_gpu_component(w)}
    new = {(w.kind, w.namespace, w.name): w for w in after if is_gpu_component(w)}
    changes = []
    for key in sorted(old.keys() | new.keys()):
        was, now = old.get(key), new.get(key)
        if was and now and was.spec_hash == now.spec_hash:
            continue
        changes.append(_component_change(key, was, now))
    return changes


def _component_change(
    key: tuple[str, str, str], was: snap.Workload | None, now: snap.Workload | None
) -> DriftChange:
    """DRIFT-002 on one controller, naming what changed in its pod template."""
    kind, namespace, name = key
    before, after = workload_view(was), workload_view(now)
    summary = f"{kind} {namespace}/{name} {'added' if now else 'removed'}"
    if was and now:
        parts_before, parts_after, said = template_changes(was, now)
        before, after = {**before, **parts_before}, {**after, **parts_after}
        more = f"; and {len(said) - 4} more" if len(said) > 4 else ""  # the summary is short
        summary = f"{kind} {namespace}/{name} pod spec changed" + (
            ": " + "; ".join(said[:4]) + more if said else ""
        )
    return DriftChange("component", "DRIFT-002", kind, namespace, name, summary, before, after)


def _operator_policy_changes(
    before: Iterable[snap.GpuOperatorPolicy], after: Iterable[snap.GpuOperatorPolicy]
) -> list[DriftChange]:
    """A changed ClusterPolicy reconfigures every GPU node: report what it now says."""
    old = {p.name: p for p in before}
    new = {p.name: p for p in after}
    changes = []
    for name in sorted(old.keys() | new.keys()):
        was, now = old.get(name), new.get(name)
        if was and now and was.spec_hash == now.spec_hash:
            continue
        was_spec = was.spec if was else {}
        now_spec = now.spec if now else {}
        fields = sorted(
            k for k in was_spec.keys() | now_spec.keys() if was_spec.get(k) != now_spec.get(k)
        )
        changes.append(
            DriftChange(
                "component",
                "DRIFT-002",
                "ClusterPolicy",
                "",
                name,
                f"GPU Operator ClusterPolicy {name} changed"
                + (": " + ", ".join(fields) if fields else ""),
                before={k: was_spec.get(k) for k in fields} if was else {"present": False},
                after={k: now_spec.get(k) for k in fields} if now else {"present": False},
            )
        )
    return changes


def _rbac_changes(before: ClusterState, after: ClusterState) -> list[DriftChange]:
    """DRIFT-006 on the binding that brings it; the GPU stack's namespaces are those running
    its components, before or after."""
    stack = {w.namespace for w in (*before.workloads, *after.workloads) if is_gpu_component(w)}
    found = detect_rbac_drift(
        RbacState(before.roles, before.bindings), RbacState(after.roles, after.bindings), stack
    )
    return [
        DriftChange("rbac", "DRIFT-006", d.kind, d.namespace, d.name, d.summary, d.before, d.after)
        for d in found
    ]
