"""Drift compares only what both syncs read. PURE.

A kind one of the two syncs did not read (a snapshot without ConfigMaps, Deployments or RBAC;
a live list refused: inventory.kinds_read) says nothing about change: its objects "gone" or
"added" would be DRIFT- findings about a read, not about the cluster. Each part of the state
is kept only where the kinds it comes from were read by both syncs.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace

from inventory.drift import ClusterState

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
        # The device-plugin config in force is resolved from ConfigMaps: unread on one side,
        # the nodes compare what their labels name instead (as nodes stored before it was).
        nodes = tuple(replace(n, device_plugin_config_used=None) for n in nodes)
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
