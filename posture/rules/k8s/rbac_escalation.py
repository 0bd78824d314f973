"""RBAC escalation paths: rights that let a tenant take rights it does not hold. PURE
(K8S-003/-004, DRA-001).

Total paths, which reach any right:
- `impersonate` on `groups` (core API group) for `system:masters`, cluster-wide: it then acts
  as the superuser group, which the RBAC authorizer never limits;
- `bind` on the ClusterRole `cluster-admin` (present on every cluster) with `create` on
  `clusterrolebindings`: it binds cluster-admin to itself (`bind` lifts RBAC's check that a
  binding grants no more than its author holds);
- `escalate` with `update` or `patch` on every ClusterRole: it adds any rule to a role it is
  bound to;
- the same `bind` (any ClusterRole) with `create` on `rolebindings`, or `escalate` with a write
  on `roles`, inside one namespace: any right there, the Namespace object itself included;
- running code in a GPU Operator namespace (creating pods or the controllers that make them,
  changing those controllers, `exec`/`attach` into its pods): its pods run privileged on every
  GPU node under the operator's own service accounts.
Assumed identities, which reach what that identity holds (the bindings naming it; a service
account also holds what its namespace's `system:serviceaccounts:NS` group holds):
- `impersonate` on `users`, `groups` or `serviceaccounts` for that name;
- running code in another namespace: a pod runs as any service account of its namespace;
- `create` on `serviceaccounts/token`: a token of that service account.
One step only: an assumed identity's own total paths count, an identity it may assume in turn
does not.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import cast

from inventory.drift import is_gpu_component
from inventory.rbac import (
    SA_GROUP_PREFIX,
    SA_USER_PREFIX,
    binding_order,
    find_role,
    role_rules,
    subject_label,
)
from inventory.snapshot import Subject
from posture.inputs import PostureInputs, TenantInfo
from posture.rules.k8s.rbac_eval import (
    Grant,
    effective_permissions,
    subject_of_tenant,
    tenant_namespaces,
)

MASTERS = "system:masters"
CLUSTER_ADMIN = "cluster-admin"
RBAC_GROUP = "rbac.authorization.k8s.io"
IMPERSONATED = {"User": "users", "Group": "groups", "ServiceAccount": "serviceaccounts"}
# (verbs, API group, resource) that run code of one's choosing in a namespace.
RUNS_CODE = (
    (("create",), "", "pods"),
    (("create",), "", "pods/exec"),
    (("create",), "", "pods/attach"),
    (("update", "patch"), "", "pods/ephemeralcontainers"),
    (("create", "update", "patch"), "", "replicationcontrollers"),
    *(
        (("create", "update", "patch"), "apps", resource)
        for resource in ("deployments", "daemonsets", "statefulsets", "replicasets")
    ),
    (("create",), "batch", "jobs"),
    (("create", "update", "patch"), "batch", "cronjobs"),
)
ANY_SA = "*"  # an identity key's name: every service account of its namespace

Identity = tuple[str, str, str]  # (kind, namespace or "", name): "User", "Group", "ServiceAccount"


@dataclass(frozen=True)
class Escalation:
    """One way a grant reaches more than it says: every right (total; within `namespace` only,
    when set) or the rights of an identity it may assume (`grants`)."""

    how: str
    grants: tuple[Grant, ...] = ()
    total: bool = False
    namespace: str | None = None

    def allows(
        self, verb: str, group: str, resource: str, namespace: str | None, name: str | None
    ) -> bool:
        if self.total:
            return self.namespace is None or namespace == self.namespace
        return any(g.allows(verb, group, resource, namespace, name) for g in self.grants)


def escalations(inputs: PostureInputs, tenant: TenantInfo) -> dict[Grant, tuple[Escalation, ...]]:
    """The tenant's grants that open an escalation path, each with its paths. Computed once
    per tenant and evaluation (K8S-003, K8S-004 and DRA-001 all ask)."""
    key = ("escalations", tenant.slug)
    if key not in inputs.memo:
        inputs.memo[key] = _tenant_escalations(inputs, tenant)
    return dict(cast("dict[Grant, tuple[Escalation, ...]]", inputs.memo[key]))  # stored above


def reaching(
    inputs: PostureInputs,
    tenant: TenantInfo,
    verb: str,
    group: str,
    resource: str,
    namespace: str | None,
    name: str | None,
) -> Iterator[tuple[Grant, tuple[str, ...]]]:
    """Each of the tenant's grants that allows the request: directly (no paths), or else by
    the escalation paths named."""
    paths_of = escalations(inputs, tenant)
    for grant in effective_permissions(inputs, tenant):
        if grant.allows(verb, group, resource, namespace, name):
            yield grant, ()
            continue
        paths = tuple(
            e.how
            for e in paths_of.get(grant, ())
            if e.allows(verb, group, resource, namespace, name)
        )
        if paths:
            yield grant, paths


def _tenant_escalations(
    inputs: PostureInputs, tenant: TenantInfo
) -> dict[Grant, tuple[Escalation, ...]]:
    grants = effective_permissions(inputs, tenant)
    found: dict[Grant, list[Escalation]] = {}
    own = tenant_namespaces(inputs, tenant)
    operator_ns = {w.namespace for w in inputs.snapshot.workloads if is_gpu_component(w)}
    for grant, escalation in _total(grants, own | operator_ns):
        found.setdefault(grant, []).append(escalation)
    identities = {
        identity: held
        for identity, (subject, held) in _identities(inputs).items()
        if subject_of_tenant(subject, tenant, own) is None  # not already the tenant's own
    }
    elsewhere = sorted(({ns for _, ns, _ in identities if ns} | operator_ns) - own)
    for grant in grants:
        for escalation in _assumed(grant, identities, elsewhere, operator_ns, own):
            found.setdefault(grant, []).append(escalation)
    return {grant: tuple(paths) for grant, paths in found.items()}


def _total(
    grants: list[Grant], namespaces: Iterable[str] = ()
) -> Iterator[tuple[Grant, Escalation]]:
    """The grants that open a total path; namespaced paths in `namespaces` and in those the
    grants are bound in."""

    def allowed(verb: str, resource: str, namespace: str | None, name: str | None = None):
        return [g for g in grants if g.allows(verb, RBAC_GROUP, resource, namespace, name)]

    for grant in (g for g in grants if g.allows("impersonate", "", "groups", None, MASTERS)):
        yield grant, Escalation(f"may impersonate group {MASTERS}", total=True)
    if allowed("create", "clusterrolebindings", None):
        how = f"may bind ClusterRole {CLUSTER_ADMIN} to itself with bind and create"
        for grant in allowed("bind", "clusterroles", None, CLUSTER_ADMIN):
            yield grant, Escalation(how, total=True)
    if allowed("update", "clusterroles", None) or allowed("patch", "clusterroles", None):
        how = "may add any rule to ClusterRoles with escalate and update"
        for grant in allowed("escalate", "clusterroles", None):
            yield grant, Escalation(how, total=True)
    # Inside one namespace: a RoleBinding to cluster-admin there, or any rule added to a Role.
    for namespace in sorted({g.scope for g in grants if g.scope is not None} | set(namespaces)):
        if allowed("create", "rolebindings", namespace):
            how = f"may bind ClusterRole {CLUSTER_ADMIN} in namespace {namespace}"
            for grant in allowed("bind", "clusterroles", namespace, CLUSTER_ADMIN):
                yield grant, Escalation(how, total=True, namespace=namespace)
        if any(allowed(v, "roles", namespace) for v in ("create", "update", "patch")):
            how = f"may add any rule to Roles in namespace {namespace} with escalate"
            for grant in allowed("escalate", "roles", namespace):
                yield grant, Escalation(how, total=True, namespace=namespace)


def _identities(inputs: PostureInputs) -> dict[Identity, tuple[Subject, tuple[Grant, ...]]]:
    """Every identity a binding names, with one of its subjects and what it holds. Memoised."""
    key = ("rbac-identities",)
    if key not in inputs.memo:
        snapshot = inputs.snapshot
        cluster_roles = {r.name: r for r in snapshot.roles if r.kind == "ClusterRole"}
        held: dict[Identity, tuple[Subject, list[Grant]]] = {}
        for binding in sorted(snapshot.bindings, key=binding_order):
            role = find_role(snapshot.roles, binding)
            if role is None:
                continue
            scope = binding.namespace if binding.kind == "RoleBinding" else None
            where = (binding.kind, binding.namespace, binding.name, role.kind, role.name)
            rules = role_rules(role, cluster_roles)
            for subject in binding.subjects:
                _, found = held.setdefault(_identity(subject), (subject, []))
                label = subject_label(subject)
                found += [Grant(label, *where, rule, scope, source) for rule, source in rules]
        inputs.memo[key] = {k: (s, tuple(g)) for k, (s, g) in held.items()}
    return cast("dict[Identity, tuple[Subject, tuple[Grant, ...]]]", inputs.memo[key])


def _identity(subject: Subject) -> Identity:
    """How the authorizer sees a subject: a service account however it is spelt."""
    if subject.kind == "User" and subject.name.startswith(SA_USER_PREFIX):
        namespace, _, name = subject.name.removeprefix(SA_USER_PREFIX).partition(":")
        return ("ServiceAccount", namespace, name)
    if subject.kind == "Group" and subject.name.startswith(SA_GROUP_PREFIX):
        return ("ServiceAccount", subject.name.removeprefix(SA_GROUP_PREFIX), ANY_SA)
    if subject.kind == "ServiceAccount":
        return ("ServiceAccount", subject.namespace or "", subject.name)
    return (subject.kind, "", subject.name)


def _names(grant: Grant) -> tuple[str | None, ...]:
    """Object names to ask about: any (None) or each name the rule is limited to."""
    return grant.rule.resource_names or (None,)


def _assumed(
    grant: Grant,
    identities: dict[Identity, tuple[Grant, ...]],
    elsewhere: list[str],
    operator_ns: set[str],
    own: set[str],
) -> Iterator[Escalation]:
    runs_in = [
        ns
        for ns in ([grant.scope] if grant.scope is not None else elsewhere)
        if ns not in own and _runs_code(grant, ns)
    ]
    for ns in runs_in:
        if ns in operator_ns:
            how = f"may run pods in GPU Operator namespace {ns} (privileged, as its accounts)"
            yield Escalation(how, total=True)
    for identity, held in sorted(identities.items()):
        kind, namespace, name = identity
        verb = None
        if kind == "ServiceAccount" and namespace in runs_in:
            verb = "may run pods in namespace " + namespace + " as"
        elif _impersonates(grant, identity):
            verb = "may impersonate"
        elif name != ANY_SA and _token_for(grant, identity):
            verb = "may create a token for"
        if verb is None:
            continue
        gained = held
        if kind == "ServiceAccount" and name != ANY_SA:  # and its namespace's group
            gained = (*held, *identities.get(("ServiceAccount", namespace, ANY_SA), ()))
        how = f"{verb} {_label(identity)}"
        totals = sorted({e.how for _, e in _total(list(gained)) if e.namespace is None})
        if totals:
            yield Escalation(f"{how}, which {totals[0]}", total=True)
        else:
            yield Escalation(how, grants=gained)


def _runs_code(grant: Grant, namespace: str) -> bool:
    return any(
        grant.allows(verb, group, resource, namespace, name)
        for verbs, group, resource in RUNS_CODE
        for verb in verbs
        for name in _names(grant)
    )


def _token_for(grant: Grant, identity: Identity) -> bool:
    kind, namespace, name = identity
    return kind == "ServiceAccount" and grant.allows(
        "create", "", "serviceaccounts/token", namespace, name
    )


def _impersonates(grant: Grant, identity: Identity) -> bool:
    kind, namespace, name = identity
    resource = IMPERSONATED.get(kind)
    if resource is None:
        return False
    if kind != "ServiceAccount":
        return grant.allows("impersonate", "", resource, None, name)
    names: Iterable[str | None] = _names(grant) if name == ANY_SA else (name,)
    return any(grant.allows("impersonate", "", resource, namespace, n) for n in names)


def _label(identity: Identity) -> str:
    kind, namespace, name = identity
    if kind == "ServiceAccount":
        if name == ANY_SA:
            return f"Group {SA_GROUP_PREFIX}{namespace}"
        return f"ServiceAccount {namespace}/{name}"
    return f"{kind} {name}"
