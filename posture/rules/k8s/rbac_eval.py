"""The PURE RBAC evaluator behind K8S-003..005: grants, subjects, rule matching.

It follows the API server's RBAC authorizer: a ClusterRoleBinding grants cluster-wide, a
RoleBinding only in its own namespace (even when it refers to a ClusterRole), `*` matches any verb,
group or resource, and a rule with `resourceNames` grants on those names only (never on create or
on a whole collection).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from inventory.snapshot import ClusterSnapshot, PolicyRule, Role, RoleBinding, Subject
from posture.inputs import PostureInputs, TenantInfo

ANY = "*"
SA_GROUP_PREFIX = "system:serviceaccounts:"  # + namespace: every service account in it
SA_USER_PREFIX = "system:serviceaccount:"  # + namespace:name, how a service account logs in
# Groups every tenant identity belongs to, so a binding to them reaches each tenant.
ALL_AUTHENTICATED = "system:authenticated"
ALL_SERVICE_ACCOUNTS = "system:serviceaccounts"


@dataclass(frozen=True)
class Grant:
    """One rule a tenant subject holds through one binding, and where it applies."""

    subject: str  # "Group:NAME", "User:NAME", "ServiceAccount:NAMESPACE/NAME"
    binding_kind: str
    binding_namespace: str | None
    binding_name: str
    role_kind: str
    role_name: str
    rule: PolicyRule
    scope: str | None  # None: cluster-wide (ClusterRoleBinding); else the only namespace
    aggregated_from: str | None = None  # the ClusterRole aggregation took the rule from

    def allows(
        self, verb: str, group: str, resource: str, namespace: str | None, name: str | None
    ) -> bool:
        """True when this grant authorises the request; `namespace` None is a cluster-scoped
        request, `name` None a request on no single object (create, list, a collection)."""
        rule = self.rule
        if self.scope is not None and namespace != self.scope:
            return False
        if rule.resource_names and (name is None or name not in rule.resource_names):
            return False
        return (
            _matches(verb, rule.verbs)
            and _matches(group, rule.api_groups)
            and _matches(resource, rule.resources)
        )

    @property
    def binding_ref(self) -> tuple[str, str, str]:
        return (self.binding_kind, self.binding_namespace or "", self.binding_name)

    def as_evidence(self) -> dict[str, Any]:
        return {
            "subject": self.subject,
            "binding": _ref(self.binding_kind, self.binding_namespace, self.binding_name),
            "role": _ref(self.role_kind, None, self.role_name),
            "aggregated_from": self.aggregated_from,
            "rule": {
                "apiGroups": list(self.rule.api_groups),
                "resources": list(self.rule.resources),
                "verbs": list(self.rule.verbs),
                "resourceNames": list(self.rule.resource_names),
            },
            "scope": "cluster" if self.scope is None else f"namespace {self.scope}",
        }


def _matches(value: str, allowed: Iterable[str]) -> bool:
    return any(a in (ANY, value) for a in allowed)


def _subject_label(subject: Subject) -> str:
    if subject.kind == "ServiceAccount":
        return f"ServiceAccount:{subject.namespace}/{subject.name}"
    return f"{subject.kind}:{subject.name}"


def _ref(kind: str, namespace: str | None, name: str) -> str:
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


# --- evaluation --------------------------------------------------------------------------------


def tenant_namespaces(inputs: PostureInputs, tenant: TenantInfo) -> set[str]:
    """The tenant's namespaces: listed on it or labelled for it."""
    owned = {ns for ns, slug in inputs.namespace_owner.items() if slug == tenant.slug}
    return owned | set(tenant.namespaces)


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


def subject_of_tenant(subject: Subject, tenant: TenantInfo, namespaces: set[str]) -> str | None:
    """How `subject` names the tenant ("Group:NAME", ...), or None when it does not."""
    if subject.kind in ("Group", "User"):
        prefix = f"{subject.kind.lower()}:"
        if prefix + subject.name in tenant.principals or subject.name == ALL_AUTHENTICATED:
            return _subject_label(subject)
        if subject.name == ALL_SERVICE_ACCOUNTS and subject.kind == "Group" and namespaces:
            return _subject_label(subject)
    namespace = service_account_namespace(subject)
    return _subject_label(subject) if namespace and namespace in namespaces else None


def _selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    # An empty selector here came from matchExpressions we do not read: aggregate nothing
    # rather than every ClusterRole in the cluster.
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


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
            if any(_selects(sel, other.labels) for sel in current.aggregation_labels):
                seen.add(other.name)
                queue.append(other)
                for rule in other.rules:
                    rules.setdefault(rule, other.name)
    return list(rules.items())


def _find_role(snapshot: ClusterSnapshot, binding: RoleBinding) -> Role | None:
    if binding.role_kind == "ClusterRole":
        key = ("ClusterRole", None, binding.role_name)
    elif binding.role_kind == "Role" and binding.kind == "RoleBinding":
        key = ("Role", binding.namespace, binding.role_name)
    else:
        return None
    return next((r for r in snapshot.roles if (r.kind, r.namespace, r.name) == key), None)


def effective_permissions(inputs: PostureInputs, tenant: TenantInfo) -> list[Grant]:
    """Every rule any of the tenant's identities holds, one Grant per subject, binding and
    rule. A binding to a missing role grants nothing (the API server treats it the same)."""
    snapshot = inputs.snapshot
    namespaces = tenant_namespaces(inputs, tenant)
    cluster_roles = {r.name: r for r in snapshot.roles if r.kind == "ClusterRole"}
    grants: list[Grant] = []
    for binding in sorted(snapshot.bindings, key=_binding_order):
        subjects = [
            label
            for s in binding.subjects
            if (label := subject_of_tenant(s, tenant, namespaces)) is not None
        ]
        role = _find_role(snapshot, binding) if subjects else None
        if role is None:
            continue
        scope = binding.namespace if binding.kind == "RoleBinding" else None
        where = (binding.kind, binding.namespace, binding.name, role.kind, role.name)
        for subject in dict.fromkeys(subjects):
            for rule, source in role_rules(role, cluster_roles):
                grants.append(Grant(subject, *where, rule, scope, source))
    return grants


def _binding_order(binding: RoleBinding) -> tuple[str, str, str]:
    return (binding.kind, binding.namespace or "", binding.name)


def can(
    inputs: PostureInputs,
    tenant: TenantInfo,
    verb: str,
    group: str,
    resource: str,
    namespace: str | None = None,
    name: str | None = None,
) -> list[Grant]:
    """The tenant's grants that allow `verb` on `group`/`resource` (in `namespace`, on `name`)."""
    return [
        g
        for g in effective_permissions(inputs, tenant)
        if g.allows(verb, group, resource, namespace, name)
    ]
