"""RBAC drift that reaches the GPU stack (DRIFT-006), between two good syncs. PURE.

Two changes are drift, each reported on the binding that brings it:
- a binding that newly names a service account of the GPU stack's namespaces (the GPU Operator,
  the device plugin): its identity now holds more, or someone else's role is now its;
- a subject that newly holds node-label rights (patch or update on nodes, through a
  ClusterRoleBinding, aggregated ClusterRoles and wildcards included): whoever labels nodes
  moves them between pools and repartitions their GPUs. A subject that held them through
  another binding already is nothing new; a role widened under an existing binding is.
A removed binding takes rights away and is no drift. Rights are read with inventory/rbac.py,
as the checks read them.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from inventory.rbac import (
    RoleKey,
    binding_order,
    find_role,
    ref,
    role_index,
    role_rules,
    rule_allows,
    service_account_namespace,
    subject_label,
)
from inventory.snapshot import Role, RoleBinding

NODE_WRITE_VERBS = ("patch", "update")
NODE_RESOURCES = ("nodes", "nodes/status")
Key = tuple[str, str, str]  # (kind, namespace or "", name) of a binding


@dataclass(frozen=True)
class RbacDrift:
    """What changed about one binding: the subjects it newly brings to the GPU stack."""

    kind: str
    namespace: str
    name: str
    summary: str
    before: dict[str, Any]
    after: dict[str, Any]


@dataclass(frozen=True)
class RbacState:
    """The RBAC objects of one sync that drift compares (ClusterRoles are enough for nodes)."""

    roles: tuple[Role, ...] = ()
    bindings: tuple[RoleBinding, ...] = ()

    def node_writers(self) -> dict[str, dict[Key, list[str]]]:
        """subject -> the ClusterRoleBindings giving it node writes, with the verbs."""
        cluster_roles = {r.name: r for r in self.roles if r.kind == "ClusterRole"}
        found: dict[str, dict[Key, list[str]]] = {}
        roles = role_index(self.roles)
        for binding in self.bindings:
            verbs = _node_verbs(binding, roles, cluster_roles)
            for subject in binding.subjects if verbs else ():
                found.setdefault(subject_label(subject), {})[binding_order(binding)] = verbs
        return found


def _node_verbs(
    binding: RoleBinding, roles: Mapping[RoleKey, Role], cluster_roles: dict
) -> list[str]:
    """patch/update on nodes (or their status, which takes the labels it is sent, as K8S-003
    reads it) the binding grants: only a ClusterRoleBinding reaches them; a rule with
    resourceNames still writes the nodes it names."""
    role = find_role(roles, binding) if binding.kind == "ClusterRoleBinding" else None
    if role is None:
        return []
    rules = [rule for rule, _source in role_rules(role, cluster_roles)]
    return [
        verb
        for verb in NODE_WRITE_VERBS
        if any(
            rule_allows(r, verb, "", resource, next(iter(r.resource_names), None))
            for r in rules
            for resource in NODE_RESOURCES
        )
    ]


def _stack_subjects(binding: RoleBinding, stack_namespaces: Collection[str]) -> list[str]:
    return [
        subject_label(s)
        for s in binding.subjects
        if service_account_namespace(s) in stack_namespaces
    ]


def _new_stack_subjects(
    binding: RoleBinding, was: RoleBinding | None, stack_namespaces: Collection[str]
) -> list[str]:
    """The GPU stack's service accounts the binding names that it did not name before with
    the same role (a roleRef cannot change in place: a new role is a new binding)."""
    now = _stack_subjects(binding, stack_namespaces)
    if was is None or (was.role_kind, was.role_name) != (binding.role_kind, binding.role_name):
        return now
    return [s for s in now if s not in _stack_subjects(was, stack_namespaces)]


def detect_rbac_drift(
    before: RbacState, after: RbacState, stack_namespaces: Collection[str]
) -> list[RbacDrift]:
    """Bindings that newly give the GPU stack's service accounts a role, or give a subject
    node-label rights it did not have, since `before`."""
    old = {binding_order(b): b for b in before.bindings}
    writers_before, writers_after = before.node_writers(), after.node_writers()
    changes = []
    for binding in sorted(after.bindings, key=binding_order):
        key, was = binding_order(binding), old.get(binding_order(binding))
        stack = _new_stack_subjects(binding, was, stack_namespaces)
        labellers = sorted(
            s for s, via in writers_after.items() if key in via and s not in writers_before
        )
        if stack or labellers:
            changes.append(_drift(binding, was, stack, labellers, before, after))
    return changes


def _drift(
    binding: RoleBinding,
    was: RoleBinding | None,
    stack: list[str],
    labellers: list[str],
    before: RbacState,
    after: RbacState,
) -> RbacDrift:
    what = []
    if stack:
        what.append(f"binds GPU stack service account {', '.join(stack)}")
    if labellers:
        what.append(f"gives {', '.join(labellers)} node-label rights (patch/update nodes)")
    where = ref(binding.kind, binding.namespace, binding.name)
    change = "added" if was is None else "changed"
    return RbacDrift(
        kind=binding.kind,
        namespace=binding.namespace or "",
        name=binding.name,
        summary=f"{where} {change}: {'; '.join(what)}",
        before=_view(was, before) if was else {"present": False},
        after={
            **_view(binding, after),
            "new_gpu_stack_subjects": stack,
            "new_node_label_subjects": labellers,
        },
    )


def _view(binding: RoleBinding, state: RbacState) -> dict[str, Any]:
    cluster_roles = {r.name: r for r in state.roles if r.kind == "ClusterRole"}
    return {
        "role": ref(binding.role_kind, None, binding.role_name),
        "subjects": [subject_label(s) for s in binding.subjects],
        "node_verbs": _node_verbs(binding, role_index(state.roles), cluster_roles),
    }
