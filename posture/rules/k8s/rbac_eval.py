"""The PURE RBAC evaluator behind K8S-003..005 and K8S-008: what each tenant's identities hold.

It follows the API server's RBAC authorizer: a ClusterRoleBinding grants cluster-wide, a
RoleBinding only in its own namespace (even when it refers to a ClusterRole); rule matching,
aggregation and subject spelling are inventory/rbac.py's, shared with RBAC drift. A binding to
one of the ClusterRoles every cluster has (cluster-admin, admin, edit, view) that the snapshot
did not hold grants that role's default rules (inventory/rbac_defaults.py), and says so.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, cast

from inventory.rbac import (
    ALL_SERVICE_ACCOUNTS,
    EVERYONE,
    SA_USER_PREFIX,
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
from inventory.rbac_defaults import missing_defaults
from inventory.snapshot import PolicyRule, Role, RoleBinding, Subject
from inventory.sources.aws_auth import AWS_AUTH
from posture.inputs import PostureInputs, TenantInfo
from posture.rules.k8s.aws_auth import EVERYTHING, MASTERS_ROLE, SYSTEM_MASTERS, mapped_roles

# The kinds the evaluator reads: a check over it that a sync read none of one of them did not
# look (Check.needs). A RoleBinding grants in its namespace what a ClusterRoleBinding grants
# everywhere (an edit binding in another tenant's namespace, exec in the GPU Operator's), so
# an export without namespaced RBAC would read as "nobody is granted" and resolve findings.
RBAC_KINDS = ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")


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
    # The bound ClusterRole was not in the snapshot: Kubernetes' default for it stood in.
    role_default: bool = False
    # How the tenant is the subject when it is not one of its own (an IAM role its workloads
    # assume, mapped by EKS's aws-auth: posture/rules/k8s/aws_auth.py); "" when it is.
    via: str = ""

    def allows(
        self, verb: str, group: str, resource: str, namespace: str | None, name: str | None
    ) -> bool:
        """True when this grant authorises the request; `namespace` None is a cluster-scoped
        request, `name` None a request on no single object (create, list, a collection)."""
        if self.scope is not None and namespace != self.scope:
            return False
        return rule_allows(self.rule, verb, group, resource, name)

    @property
    def binding_ref(self) -> tuple[str, str, str]:
        return (self.binding_kind, self.binding_namespace or "", self.binding_name)

    def as_evidence(self) -> dict[str, Any]:
        # Said only of a stand-in, so the evidence of every other grant stays as it was.
        default = {"role_rules_from": DEFAULT_NOTE % self.role_name} if self.role_default else {}
        return {
            "subject": self.subject,
            "binding": ref(self.binding_kind, self.binding_namespace, self.binding_name),
            "role": ref(self.role_kind, None, self.role_name),
            **default,
            **({"via": self.via} if self.via else {}),
            "aggregated_from": self.aggregated_from,
            "rule": {
                "apiGroups": list(self.rule.api_groups),
                "resources": list(self.rule.resources),
                "verbs": list(self.rule.verbs),
                "resourceNames": list(self.rule.resource_names),
            },
            "scope": "cluster" if self.scope is None else f"namespace {self.scope}",
        }


DEFAULT_NOTE = (
    "Kubernetes' defaults: the snapshot held no ClusterRole %s, which the API server creates "
    "on every cluster"
)


# --- evaluation --------------------------------------------------------------------------------


def tenant_namespaces(inputs: PostureInputs, tenant: TenantInfo) -> set[str]:
    """The tenant's namespaces: listed on it or labelled for it."""
    owned = {ns for ns, slug in inputs.namespace_owner.items() if slug == tenant.slug}
    return owned | set(tenant.namespaces)


def subject_of_tenant(subject: Subject, tenant: TenantInfo, namespaces: set[str]) -> str | None:
    """How `subject` names the tenant ("Group:NAME", ...), or None when it does not. A service
    account is the tenant's when it lives in one of its namespaces or when the tenant lists it
    as `user:system:serviceaccount:NS:NAME`, however the binding spells it."""
    if subject.kind in ("Group", "User"):
        # Exactly as the tenant lists it: Kubernetes compares names case-sensitively.
        prefix = f"{subject.kind.lower()}:"
        if prefix + subject.name in tenant.principals or (subject.kind, subject.name) in EVERYONE:
            return subject_label(subject)
        if subject.name == ALL_SERVICE_ACCOUNTS and subject.kind == "Group":
            return subject_label(subject) if namespaces or _listed_accounts(tenant) else None
    namespace = service_account_namespace(subject)
    if not namespace:
        return None
    if namespace in namespaces:
        return subject_label(subject)
    listed = _listed_accounts(tenant)
    if subject.kind == "Group":  # system:serviceaccounts:NS holds every account of NS
        return subject_label(subject) if any(ns == namespace for ns, _ in listed) else None
    name = subject.name if subject.kind == "ServiceAccount" else subject.name.rsplit(":", 1)[-1]
    return subject_label(subject) if (namespace, name) in listed else None


EVERY_TENANT = ("every tenant",)  # subject_keys: a subject that may name any tenant


def subject_keys(subject: Subject) -> tuple[tuple[str, ...], ...]:
    """Keys under which subject_of_tenant may find the subject a tenant's: it names a tenant
    only if one of these is among tenant_keys(tenant, namespaces). For an index, so a tenant
    is matched against the few subjects that may name it, not every subject of the cluster."""
    keys: list[tuple[str, ...]] = []
    if subject.kind in ("Group", "User"):
        keys.append(("principal", f"{subject.kind.lower()}:{subject.name}"))
        everyone = (subject.kind, subject.name) in EVERYONE
        if everyone or (subject.kind == "Group" and subject.name == ALL_SERVICE_ACCOUNTS):
            keys.append(EVERY_TENANT)
    namespace = service_account_namespace(subject)
    if namespace:
        keys.append(("namespace", namespace))
    return tuple(keys)


def tenant_keys(tenant: TenantInfo, namespaces: set[str]) -> set[tuple[str, ...]]:
    """The keys of subject_keys any subject naming the tenant has (see subject_of_tenant): a
    principal it lists, a subject of every tenant, a service-account namespace it owns or
    names an account of."""
    listed = {ns for ns, _ in _listed_accounts(tenant)}
    return (
        {EVERY_TENANT}
        | {("principal", p) for p in tenant.principals}
        | {("namespace", ns) for ns in namespaces | listed}
    )


def _listed_accounts(tenant: TenantInfo) -> frozenset[tuple[str, str]]:
    """(namespace, name) of the service accounts the tenant lists as user principals."""
    return _accounts_in(tuple(tenant.principals))


@lru_cache(maxsize=4096)  # asked for every subject of every binding, for each tenant
def _accounts_in(principals: tuple[str, ...]) -> frozenset[tuple[str, str]]:
    prefix = f"user:{SA_USER_PREFIX}"
    found = set()
    for principal in principals:
        namespace, _, name = principal.removeprefix(prefix).partition(":")
        if principal.startswith(prefix) and namespace and name:
            found.add((namespace, name))
    return frozenset(found)


def effective_permissions(inputs: PostureInputs, tenant: TenantInfo) -> list[Grant]:
    """Every rule any of the tenant's identities holds, one Grant per subject, binding and
    rule. A binding to a missing role grants nothing (the API server treats it the same),
    except to a default ClusterRole, which is never missing on a cluster (inventory.rbac_defaults).
    Computed once per tenant and evaluation: K8S-003, -004 and -008 all ask."""
    # By the whole tenant, not its slug: the unclassified party is judged with its namespaces
    # here (grantees.unclassified_grantee) and without them where a namespace's party is asked.
    key = ("grants", tenant)
    if key not in inputs.memo:
        inputs.memo[key] = tuple(_grants(inputs, tenant))
    return list(inputs.memo[key])  # type: ignore[call-overload]  # memo[key] holds what this function stored under it


def _grants(inputs: PostureInputs, tenant: TenantInfo) -> list[Grant]:
    namespaces = tenant_namespaces(inputs, tenant)
    # The Kubernetes identities EKS's aws-auth maps the tenant's IAM roles to are its too.
    mapped = mapped_roles(inputs, namespaces)
    vias: dict[str, str] = {}
    for found in mapped:
        for principal in found.principals:
            vias.setdefault(principal, found.via())
    vias.pop(f"group:{SYSTEM_MASTERS}", None)  # authorised before RBAC: below, not by binding
    own = set(tenant.principals)
    vias = {p: v for p, v in vias.items() if p not in own}
    if vias:
        tenant = replace(tenant, principals=(*tenant.principals, *vias))
    bound = bound_roles(inputs)
    # Only the subjects that may name the tenant (subject_keys) are asked, in binding order
    # and each binding's subject order: a tenant is named by a few of the cluster's subjects.
    index = _bound_subjects(inputs)
    keys = tenant_keys(tenant, namespaces)
    candidates = sorted({at for key in keys for at in index.get(key, ())})
    named: dict[int, list[str]] = {}
    for position, at in candidates:
        label = subject_of_tenant(bound[position][0].subjects[at], tenant, namespaces)
        if label is not None:
            named.setdefault(position, []).append(label)
    grants: list[Grant] = []
    for position, subjects in named.items():
        for subject in dict.fromkeys(subjects):
            kind, _, name = subject.partition(":")
            via = vias.get(f"{kind.lower()}:{name}", "")
            grants += [replace(g, via=via) for g in bound_grants(subject, bound[position])]
    masters = [m for m in mapped if SYSTEM_MASTERS in m.groups]
    if masters:
        where = ("ConfigMap", AWS_AUTH[0], AWS_AUTH[1], "no role", MASTERS_ROLE)
        subject = f"Group:{SYSTEM_MASTERS}"
        grants.append(Grant(subject, *where, EVERYTHING, None, None, False, masters[0].via()))
    return grants


# A binding, its role, the role's rules (each with the ClusterRole aggregated from) and whether
# the role is a default standing in for one the snapshot did not hold.
Bound = tuple[RoleBinding, Role, tuple[tuple[PolicyRule, str | None], ...], bool]


def bound_grants(subject: str, bound: Bound) -> list[Grant]:
    """What `subject` ("Group:NAME", ...) holds through one bound binding, rule by rule."""
    binding, role, rules, default = bound
    scope = binding.namespace if binding.kind == "RoleBinding" else None
    where = (binding.kind, binding.namespace, binding.name, role.kind, role.name)
    return [Grant(subject, *where, rule, scope, source, default) for rule, source in rules]


def roles_by_key(inputs: PostureInputs) -> dict[RoleKey, Role]:
    """The snapshot's roles by (kind, namespace, name), with the default ClusterRoles it did not
    hold: indexed once per evaluation."""
    key = ("rbac-roles",)
    if key not in inputs.memo:
        roles = inputs.snapshot.roles
        inputs.memo[key] = role_index([*roles, *missing_defaults(roles)])
    return cast("dict[RoleKey, Role]", inputs.memo[key])  # what this function stored


def bound_roles(inputs: PostureInputs) -> list[Bound]:
    """Each binding (in binding order) whose role exists, with the role and its rules
    (aggregation followed): resolved once per evaluation, not once per tenant, for the grants
    here and the escalation paths (rbac_escalation) alike. Only the snapshot's ClusterRoles
    aggregate, into a stand-in too (inventory.rbac_defaults)."""
    key = ("rbac-bound",)
    if key not in inputs.memo:
        snapshot = inputs.snapshot
        cluster_roles = {r.name: r for r in snapshot.roles if r.kind == "ClusterRole"}
        stand_ins = {r.name for r in missing_defaults(snapshot.roles)}
        found: list[Bound] = []
        roles = roles_by_key(inputs)
        for binding in sorted(snapshot.bindings, key=binding_order):
            role = find_role(roles, binding)
            if role is not None:
                rules = tuple(role_rules(role, cluster_roles))
                default = role.kind == "ClusterRole" and role.name in stand_ins
                found.append((binding, role, rules, default))
        inputs.memo[key] = found
    return cast("list[Bound]", inputs.memo[key])  # what this function stored


def _bound_subjects(inputs: PostureInputs) -> dict[tuple[str, ...], list[tuple[int, int]]]:
    """(position in bound_roles, position in the binding's subjects) of every bound subject, by
    its subject_keys: once per evaluation, so each tenant asks only the subjects that may
    name it (thousands on a large cluster, a few of them its own)."""
    key = ("rbac-bound-subjects",)
    if key not in inputs.memo:
        found: dict[tuple[str, ...], list[tuple[int, int]]] = {}
        for position, (binding, *_) in enumerate(bound_roles(inputs)):
            for at, subject in enumerate(binding.subjects):
                for subject_key in subject_keys(subject):
                    found.setdefault(subject_key, []).append((position, at))
        inputs.memo[key] = found
    return cast("dict[tuple[str, ...], list[tuple[int, int]]]", inputs.memo[key])  # stored above


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
