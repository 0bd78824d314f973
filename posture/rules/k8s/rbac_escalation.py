"""RBAC escalation paths: rights that let a tenant take rights it does not hold. PURE
(K8S-003/-004, K8S-008, DRA-001).

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
  GPU node under the operator's own service accounts; `nodes/proxy` on a node that runs one of
  those pods is the same (rbac_kubelet: exec through the kubelet API).
Assumed identities, which reach what that identity holds (the bindings naming it; a service
account also holds what its namespace's `system:serviceaccounts:NS` group holds):
- `impersonate` on `users`, `groups` or `serviceaccounts` for that name;
- running code in another namespace (rbac_paths: pods, their controllers, exec, and custom
  resources whose controllers make pods): a pod runs as any service account of its namespace;
- `nodes/proxy` (rbac_kubelet): exec through the kubelet API into the pods the snapshot shows on
  the nodes it covers, as each pod's service account; into a privileged pod, root on its node,
  so the node's kubelet, which may relabel its own Node object (nothing more: no chain from it);
- `create` on `serviceaccounts/token`, or on `secrets` with a way to read them back (a legacy
  service-account token Secret): a token of that service account.
Chains: an assumed identity's own paths count in turn (it may impersonate another, run pods
where a third lives, ...), each identity by the shortest chain, at most CHAIN_HOPS steps and
CHAIN_VISITS identities per grant; the path names the chain.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import cast

from inventory.drift import is_gpu_component
from inventory.rbac import (
    SA_GROUP_PREFIX,
    SA_USER_PREFIX,
    subject_label,
)
from inventory.snapshot import Subject
from posture.inputs import PostureInputs, TenantInfo
from posture.rules.k8s.rbac_eval import (
    Grant,
    bound_grants,
    bound_roles,
    effective_permissions,
    subject_keys,
    subject_of_tenant,
    tenant_keys,
    tenant_namespaces,
)
from posture.rules.k8s.rbac_kubelet import KUBELET, kubelet_grant, node_pods
from posture.rules.k8s.rbac_paths import (
    ANY_SA,
    Identity,
    World,
    may_assume,
    runs_code_table,
    steps,
)

MASTERS = "system:masters"
CLUSTER_ADMIN = "cluster-admin"
RBAC_GROUP = "rbac.authorization.k8s.io"


@dataclass(frozen=True)
class Escalation:
    """One way a grant reaches more than it says: every right (total; within `namespace` only,
    when set) or the rights of an identity it may assume (`grants`)."""

    how: str
    grants: tuple[Grant, ...] = ()
    total: bool = False
    namespace: str | None = None
    # Answers already given for these grants, shared by every path to the same identity.
    answers: dict[tuple[str | None, ...], bool] | None = field(
        default=None, compare=False, repr=False
    )

    def allows(
        self, verb: str, group: str, resource: str, namespace: str | None, name: str | None
    ) -> bool:
        if self.total:
            return self.namespace is None or namespace == self.namespace
        request = (verb, group, resource, namespace, name)
        if self.answers is not None and request in self.answers:
            return self.answers[request]
        answer = any(g.allows(*request) for g in self.grants)
        if self.answers is not None:
            self.answers[request] = answer
        return answer


def escalations(inputs: PostureInputs, tenant: TenantInfo) -> dict[Grant, tuple[Escalation, ...]]:
    """The tenant's grants that open an escalation path, each with its paths. Computed once
    per tenant and evaluation (K8S-003, K8S-004, K8S-008 and DRA-001 all ask)."""
    key = ("escalations", tenant)  # by the whole tenant, as effective_permissions
    if key not in inputs.memo:
        inputs.memo[key] = _tenant_escalations(inputs, tenant)
    return dict(cast("dict[Grant, tuple[Escalation, ...]]", inputs.memo[key]))  # stored above


PATHS_IN_TITLE = 3


def paths_title(paths: list[str]) -> str:
    """ " by escalation (...)": the first few paths; the evidence lists them all."""
    shown = "; ".join(paths[:PATHS_IN_TITLE])
    more = len(paths) - PATHS_IN_TITLE
    return f" by escalation ({shown}{f'; and {more} more' if more > 0 else ''})"


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
    operator_ns = _operator_namespaces(inputs)
    for grant, escalation in _total(grants, own | operator_ns):
        found.setdefault(grant, []).append(escalation)
    assumable = [g for g in grants if may_assume(g)]
    if not assumable:
        return {grant: tuple(paths) for grant, paths in found.items()}
    # What another identity holds where these checks look: cluster-wide, in the operator's
    # namespaces, in the tenant's own (its Namespace objects) and in every tenant's (K8S-008:
    # writes in another tenant's namespace); elsewhere it reaches nothing they ask about.
    where = own | operator_ns | set(inputs.namespace_owner)
    table = _identities(inputs)
    # The tenant's own identities (its rights already), asked only of those that may be.
    by_key = _identities_by_key(inputs)
    candidates = {i for key in tenant_keys(tenant, own) for i in by_key.get(key, ())}
    tenants = {
        i for i in candidates if subject_of_tenant(table[i].subject, tenant, own) is not None
    }
    # The other identities that hold something there (each identity's scopes, found once).
    everywhere, by_scope = _acting_scopes(inputs)
    useful = {i for ns in where for i in by_scope.get(ns, ())} | everywhere
    useful -= tenants
    world = _world(inputs)
    for grant in assumable:
        first = list(steps(grant, grants, table, world, own, set()))
        for escalation in _closure(inputs, first, useful, tenants):
            found.setdefault(grant, []).append(escalation)
    return {grant: tuple(paths) for grant, paths in found.items()}


def _acts(grant: Grant) -> bool:
    """A rule the checks may ask about: one that grants more than impersonation (which a
    chain follows as a path of its own, and no check asks for)."""
    return any(v != "impersonate" for v in grant.rule.verbs)


Acting = tuple[frozenset[Identity], dict[str, list[Identity]]]


def _acting_scopes(inputs: PostureInputs) -> Acting:
    """The identities with a total path or a rule the checks may ask about (_acts) that holds
    cluster-wide, and by namespace those whose such rules hold there: once per evaluation,
    where each tenant asked it of every identity's every grant."""
    key = ("rbac-acting-scopes",)
    if key not in inputs.memo:
        everywhere: set[Identity] = set()
        by_scope: dict[str, list[Identity]] = {}
        for identity, held in _identities(inputs).items():
            scopes = {g.scope for g in held.grants if _acts(g)}
            if held.total or None in scopes:
                everywhere.add(identity)
            for scope in {s for s in scopes if s is not None}:
                by_scope.setdefault(scope, []).append(identity)
        inputs.memo[key] = (frozenset(everywhere), by_scope)
    return cast("Acting", inputs.memo[key])  # what this function stored


def _world(inputs: PostureInputs) -> World:
    key = ("rbac-world",)
    if key not in inputs.memo:
        operator_ns = _operator_namespaces(inputs)
        namespaces = {ns for _, ns, _ in _identities(inputs) if ns} | operator_ns
        inputs.memo[key] = World(
            runs_code_table(inputs.snapshot),
            tuple(sorted(namespaces)),
            frozenset(operator_ns),
            node_pods(inputs.snapshot),
        )
    return cast("World", inputs.memo[key])  # what this function stored


CHAIN_HOPS = 4  # identities taken in turn after the first
CHAIN_VISITS = 200  # identities one grant's chains visit at most


def _closure(
    inputs: PostureInputs,
    steps: list[tuple[str, Identity | None]],
    useful: set[Identity],
    tenants: set[Identity],
) -> Iterator[Escalation]:
    """The escalations of one grant's first steps and of the chains from them: each identity
    by its shortest chain (breadth first), within CHAIN_HOPS and CHAIN_VISITS."""
    table = _identities(inputs)
    seen = set(tenants)
    queue: list[tuple[str, Identity, int]] = []
    for how, identity in steps:
        if identity is None:
            yield Escalation(how, total=True)
        elif identity not in seen:
            seen.add(identity)
            queue.append((how, identity, 0))
    while queue:
        how, identity, hops = queue.pop(0)
        kind, _, name = identity
        if kind == KUBELET:  # root on the node: what its kubelet may write, nothing further
            yield Escalation(how, grants=(kubelet_grant(name),))
            continue
        held = table[identity]
        if held.total:  # its own total path says it all
            yield Escalation(f"{how}, which {held.total}", total=True)
            continue
        if identity in useful:
            yield Escalation(how, grants=held.grants, answers=held.answers)
        if hops >= CHAIN_HOPS or len(seen) >= CHAIN_VISITS + len(tenants):
            continue
        for then, other in _edges(inputs, identity):
            if other is None:
                yield Escalation(f"{how}, which {then}", total=True)
            elif other not in seen:
                seen.add(other)
                queue.append((f"{how}, which {then}", other, hops + 1))


def _edges(inputs: PostureInputs, identity: Identity) -> list[tuple[str, Identity | None]]:
    """The identities one identity may take in turn (the `how` names the next one), memoised
    per evaluation; None: a total path of running code in a GPU Operator namespace."""
    key = ("rbac-edges", identity)
    if key not in inputs.memo:
        table = _identities(inputs)
        held = table[identity]
        grants = list(held.grants)
        kind, namespace, _ = identity
        # A service account already holds what its namespace's group holds.
        itself = {identity} | (
            {("ServiceAccount", namespace, ANY_SA)} if kind == "ServiceAccount" else set()
        )
        edges: dict[Identity | None, str] = {}
        for grant in (g for g in grants if may_assume(g)):
            for how, other in steps(grant, grants, table, _world(inputs), set(), itself):
                edges.setdefault(other, how)
        inputs.memo[key] = [(how, other) for other, how in edges.items()]
    return cast("list[tuple[str, Identity | None]]", inputs.memo[key])  # stored above


def _operator_namespaces(inputs: PostureInputs) -> set[str]:
    """Namespaces running the GPU stack that no tenant owns (a tenant's own DCGM exporter does
    not make its namespace the operator's)."""
    key = ("rbac-operator-namespaces",)  # once per evaluation: every tenant asks
    if key not in inputs.memo:
        stack = {w.namespace for w in inputs.snapshot.workloads if is_gpu_component(w)}
        inputs.memo[key] = frozenset(stack - set(inputs.namespace_owner))
    return set(cast("frozenset[str]", inputs.memo[key]))  # what this function stored


def _total(
    grants: list[Grant], namespaces: Iterable[str] = ()
) -> Iterator[tuple[Grant, Escalation]]:
    """The grants that open a total path; namespaced paths in `namespaces` and in those the
    grants are bound in."""

    def allowed(
        verb: str, resource: str, namespace: str | None, name: str | None = None
    ) -> list[Grant]:
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


@dataclass(frozen=True)
class Held:
    """What one identity holds: cluster-wide, by namespace, and the total path it opens."""

    subject: Subject
    grants: tuple[Grant, ...]
    cluster: tuple[Grant, ...]
    by_namespace: dict[str, tuple[Grant, ...]]
    total: str | None  # a cluster-wide total path of its own (see _total)
    answers: dict[tuple[str | None, ...], bool] = field(default_factory=dict, compare=False)


def _identities(inputs: PostureInputs) -> dict[Identity, Held]:
    """Every identity a binding names, with what it holds; a service account also holds what
    its namespace's service-account group holds. Memoised per evaluation."""
    key = ("rbac-identities",)
    if key not in inputs.memo:
        subjects: dict[Identity, Subject] = {}
        held: dict[Identity, list[Grant]] = {}
        # The bindings whose role exists, in binding order, as the grants read them.
        for bound in bound_roles(inputs):
            for subject in bound[0].subjects:
                identity = _identity(subject)
                if identity[0] == "ServiceAccount" and not identity[1]:
                    continue  # no namespace: the API server matches it to no account
                subjects.setdefault(identity, subject)
                found = held.setdefault(identity, [])
                found += bound_grants(subject_label(subject), bound)
        table: dict[Identity, Held] = {}
        for identity, grants in sorted(held.items()):
            kind, namespace, name = identity
            if kind == "ServiceAccount" and name != ANY_SA:
                grants = [*grants, *held.get(("ServiceAccount", namespace, ANY_SA), ())]
            by_namespace: dict[str, list[Grant]] = {}
            for grant in grants:
                if grant.scope is not None:
                    by_namespace.setdefault(grant.scope, []).append(grant)
            totals = sorted({e.how for _, e in _total(grants) if e.namespace is None})
            table[identity] = Held(
                subjects[identity],
                tuple(grants),
                tuple(g for g in grants if g.scope is None),
                {ns: tuple(found) for ns, found in by_namespace.items()},
                totals[0] if totals else None,
            )
        inputs.memo[key] = table
    return cast("dict[Identity, Held]", inputs.memo[key])  # what this function stored


def _identities_by_key(inputs: PostureInputs) -> dict[tuple[str, ...], list[Identity]]:
    """The identities by rbac_eval.subject_keys of their subject (once per evaluation): every
    tenant asks which are its own, and a cluster has thousands."""
    key = ("rbac-identities-by-key",)
    if key not in inputs.memo:
        found: dict[tuple[str, ...], list[Identity]] = {}
        for identity, held in _identities(inputs).items():
            for subject_key in subject_keys(held.subject):
                found.setdefault(subject_key, []).append(identity)
        inputs.memo[key] = found
    return cast("dict[tuple[str, ...], list[Identity]]", inputs.memo[key])  # stored above


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
