"""Drift compares only what both syncs read. PURE.

A kind one of the two syncs did not read (a snapshot without ConfigMaps, Deployments or RBAC;
a live list refused: inventory.kinds_read) says nothing about change: its objects "gone" or
"added" would be DRIFT- findings about a read, not about the cluster. Each part of the state
is kept only where the kinds it comes from were read by both syncs.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace

from inventory import snapshot as snap
from inventory.drift import ClusterState
from inventory.sources.node_sharing import node_mig_strategy, node_replicas, sharing_strategy

# The kinds each part of ClusterState comes from (workloads and bindings: each its own kind).
CONFIG_KINDS = frozenset({"ConfigMap"})
POLICY_KINDS = frozenset({"ClusterPolicy"})
ROLE_KINDS = frozenset({"ClusterRole"})


def read_in_both(
    before: ClusterState, after: ClusterState, read: Collection[str]
) -> tuple[ClusterState, ClusterState]:
    """`before` and `after` with only the parts whose kinds are in `read` (the kinds both
    syncs read): nodes, ConfigMaps (sharing and MIG configs, and the nodes' config in force),
    workloads by kind, ClusterPolicies, ClusterRoles and bindings by kind."""
    kinds = frozenset(read)
    return _within(before, kinds), _within(after, kinds)


def _within(state: ClusterState, kinds: frozenset[str]) -> ClusterState:
    configs = kinds >= CONFIG_KINDS
    nodes = state.nodes if "Node" in kinds else ()
    if not configs:
        nodes = tuple(_by_labels(n) for n in nodes)
    return replace(
        state,
        nodes=nodes,
        sharing_configs=state.sharing_configs if configs else (),
        configmaps=state.configmaps if configs else (),
        workloads=tuple(w for w in state.workloads if w.kind in kinds),
        operator_policies=state.operator_policies if kinds >= POLICY_KINDS else (),
        roles=state.roles if kinds >= ROLE_KINDS else (),
        bindings=tuple(b for b in state.bindings if b.kind in kinds),
    )


def _by_labels(node: snap.Node) -> snap.Node:
    """The node's sharing facts as its own labels and capacity give them, without the
    device-plugin config: with ConfigMaps unread on one side, a fact the sync took from the
    config (replicas, the mode, the plugin's MIG strategy) would read as gone or come back.
    The config in force is resolved from ConfigMaps too: the nodes compare what their labels
    name instead (as nodes stored before it was recorded). Both sides are read so, so only
    what the labels or capacity changed is a change."""
    labels, capacity = node.labels, node.gpu_capacity
    return replace(
        node,
        device_plugin_config_used=None,
        sharing_strategy=sharing_strategy(labels, capacity, None),
        time_slicing_replicas=node_replicas(labels, capacity, None),
        mig_strategy=node_mig_strategy(labels, capacity, None),
    )
