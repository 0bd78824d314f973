"""Kubernetes RBAC as the API server's authorizer reads it: rule matching, aggregated
ClusterRoles, the roles bindings refer to, and how subjects name service accounts. PURE.

The checks (posture/rules/k8s/rbac_eval.py: what a tenant may do) and drift
(inventory/drift_rbac.py: who gained rights since the last sync) both build on these, so the two
never disagree about what a binding grants. `*` matches any verb, group or resource; a rule with
`resourceNames` grants on those names only (never on create or on a whole collection).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from inventory.snapshot import PolicyRule, Role, RoleBinding, Subject

ANY = "*"
SA_GROUP_PREFIX = "system:serviceaccounts:"  # + namespace: every service account in it
SA_USER_PREFIX = "system:serviceaccount:"  # + namespace:name, how a service account logs in
# Groups every tenant identity belongs to, so a binding to them reaches each tenant.
ALL_AUTHENTICATED = "system:authenticated"
ALL_SERVICE_ACCOUNTS = "system:serviceaccounts"
# Whoever sends no credentials (anonymous auth is on by default): every tenant may, so a
# binding to them reaches each tenant as well.
UNAUTHENTICATED = "system:unauthenticated"
ANONYMOUS = "system:anonymous"
EVERYONE = {("Group", ALL_AUTHENTICATED), ("Group", UNAUTHENTICATED), ("User", ANONYMOUS)}


def matches(value: str, allowed: Iterable[str]) -> bool:
    return any(a in (ANY, value) for a in allowed)


def resource_matches(resource: str, allowed: Iterable[str]) -> bool:
    """As the authorizer matches a resource: `*`, the exact `resource/subresource`, or
    `*/subresource` for that subresource of any resource (`*/status` reaches `nodes/status`)."""
    _, slash, sub = resource.partition("/")
    return any(a in (ANY, resource) or (slash and a == f"*/{sub}") for a in allowed)


def rule_allows(
    rule: PolicyRule, verb: str, group: str, resource: str, name: str | None = None
) -> bool:
    """True when the rule authorises `verb` on `group`/`resource` (`name` None: no single
    object, as for create, list or a collection)."""
    if rule.resource_names and (name is None or name not in rule.resource_names):
        return False
    return (
        matches(verb, rule.verbs)
        and matches(group, rule.api_groups)
        and resource_matches(resource, rule.resources)
    )


def subject_label(subject: Subject) -> str:
    """ "Group:NAME", "User:NAME" or "ServiceAccount:NAMESPACE/NAME"."""
    if subject.kind == "ServiceAccount":
        return f"ServiceAccount:{subject.namespace}/{subject.name}"
    return f"{subject.kind}:{subject.name}"


def ref(kind: str, namespace: str | None, name: str) -> str:
    """How evidence names an object: "RoleBinding ns/name", "ClusterRole name"."""
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


def service_account_namespace(subject: Subject) -> str | None:
    """The namespace of the service account(s) a subject names, however it spells them:
    a ServiceAccount, the user `system:serviceaccount:NS:NAME`, the group
    `system:serviceaccounts:NS`. None for any other subject."""
    if subject.kind == "ServiceAccount":
        return subject.namespace
    if subject.kind == "User" and subject.name.startswith(SA_USER_PREFIX):
        return subject.name.removeprefix(SA_USER_PREFIX).split(":", 1)[0]
    if subject.kind == "Group" and subject.name.startswith(SA_GROUP_PREFIX):
        return subject.name.removeprefix(SA_GROUP_PREFIX)
    return None


def _selectors(role: Role) -> tuple[dict[str, Any], ...]:
    if role.aggregation_selectors:
        return role.aggregation_selectors
    # A role stored before whole selectors were read: its matchLabels alone, and an empty one
    # (matchExpressions not kept) aggregates nothing rather than every ClusterRole.
    return tuple({"matchLabels": labels} for labels in role.aggregation_labels if labels)


def _selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """A label selector as the aggregation controller applies it: every matchLabels pair and
    every matchExpression must hold, so an empty selector selects every ClusterRole."""
    wanted = selector.get("matchLabels") or {}
    if any(labels.get(k) != v for k, v in wanted.items()):
        return False
    for expression in selector.get("matchExpressions") or ():
        key, values = expression.get("key", ""), expression.get("values") or ()
        holds = {
            "In": key in labels and labels[key] in values,
            "NotIn": labels.get(key) not in values,
            "Exists": key in labels,
            "DoesNotExist": key not in labels,
        }.get(expression.get("operator", ""), False)  # the API server admits no other
        if not holds:
            return False
    return True


def role_rules(role: Role, cluster_roles: dict[str, Role]) -> list[tuple[PolicyRule, str | None]]:
    """The role's rules plus, for an aggregated ClusterRole, the rules of every ClusterRole its
    selectors match (transitively), each with the role it came from (None: its own). A live
    API already copies aggregated rules into the role, so a rule is kept once."""
    rules: dict[PolicyRule, str | None] = dict.fromkeys(role.rules)
    seen, queue = {role.name}, [role] if role.kind == "ClusterRole" else []
    while queue:
        current = queue.pop(0)
        for other in sorted(cluster_roles.values(), key=lambda r: r.name):
            if other.name in seen:
                continue
            if any(_selects(sel, other.labels) for sel in _selectors(current)):
                seen.add(other.name)
                queue.append(other)
                for rule in other.rules:
                    rules.setdefault(rule, other.name)
    return list(rules.items())


RoleKey = tuple[str, str | None, str]


def role_index(roles: Iterable[Role]) -> dict[RoleKey, Role]:
    """Roles by (kind, namespace, name), built once so that each binding finds its role by key
    rather than by scanning every role (thousands of each on a large cluster); the first role
    of a key is kept, as a scan would find it."""
    index: dict[RoleKey, Role] = {}
    for role in roles:
        index.setdefault((role.kind, role.namespace, role.name), role)
    return index


def find_role(roles: Mapping[RoleKey, Role], binding: RoleBinding) -> Role | None:
    """The role a binding refers to in `roles` (role_index); a RoleBinding's Role is in its own
    namespace, and a ClusterRoleBinding cannot refer to a Role."""
    if binding.role_kind == "ClusterRole":
        key: RoleKey = ("ClusterRole", None, binding.role_name)
    elif binding.role_kind == "Role" and binding.kind == "RoleBinding":
        key = ("Role", binding.namespace, binding.role_name)
    else:
        return None
    return roles.get(key)


def binding_order(binding: RoleBinding) -> tuple[str, str, str]:
    return (binding.kind, binding.namespace or "", binding.name)
