"""K8S-003..005: what tenants may do to the GPU control plane through RBAC.

A small PURE evaluator of Roles and bindings, then the checks over it. It follows the API
server's RBAC authorizer: a ClusterRoleBinding grants cluster-wide, a RoleBinding only in its own
namespace (even when it refers to a ClusterRole), `*` matches any verb, group or resource, and a
rule with `resourceNames` grants on those names only (never on create or on a whole collection).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from inventory.drift import is_gpu_component
from inventory.snapshot import ClusterSnapshot, PolicyRule, Role, RoleBinding, Subject
from posture.inputs import PostureInputs, TenantInfo
from posture.rules.registry import FindingDraft, check

ANY = "*"
SA_GROUP_PREFIX = "system:serviceaccounts:"  # + namespace: every service account in it
SA_USER_PREFIX = "system:serviceaccount:"  # + namespace:name, how a service account logs in
# Groups every tenant identity belongs to, so a binding to them reaches each tenant.
ALL_AUTHENTICATED = "system:authenticated"
ALL_SERVICE_ACCOUNTS = "system:serviceaccounts"

NODE_WRITE_VERBS = ("patch", "update")
EDIT_VERBS = ("create", "update", "patch", "delete")
SHARING_CONFIGMAP_PURPOSES = ("device_plugin", "mig_parted")
OPERATOR_GROUP, OPERATOR_RESOURCE = "nvidia.com", "clusterpolicies"


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


# --- checks ------------------------------------------------------------------------------------


def _by_binding(grants: Iterable[Grant]) -> dict[tuple[str, str, str], list[Grant]]:
    grouped: dict[tuple[str, str, str], list[Grant]] = {}
    for grant in grants:
        grouped.setdefault(grant.binding_ref, []).append(grant)
    return dict(sorted(grouped.items()))


def _binding_draft(
    check_id: str, tenant: TenantInfo, grants: list[Grant], evidence: dict[str, Any], title: str
) -> FindingDraft:
    kind, namespace, name = grants[0].binding_ref
    subjects = sorted({g.subject for g in grants})
    return FindingDraft(
        check_id=check_id,
        tenant=tenant.slug,
        subject_kind=kind,
        subject_namespace=namespace,
        subject_name=name,
        evidence={
            "tenant": tenant.slug,
            "binding": _ref(kind, namespace or None, name),
            "subjects": subjects,
            **evidence,
            "grants": [g.as_evidence() for g in grants],
        },
        title=f"{', '.join(subjects)} of tenant {tenant.slug} {title} through {kind} {name}",
    )


@dataclass(frozen=True)
class Target:
    """An object (or, with no name, any object of its resource) a tenant must not write."""

    kind: str
    group: str
    resource: str
    namespace: str | None
    name: str | None
    purpose: str

    def ref(self) -> str:
        return _ref(self.kind, self.namespace, self.name) if self.name else f"every {self.kind}"

    def verbs_allowed(self, grant: Grant, verbs: Iterable[str]) -> list[str]:
        # The API server authorises create without an object name: resourceNames never allow it.
        return [
            verb
            for verb in verbs
            if grant.allows(verb, self.group, self.resource, self.namespace, self._name(verb))
        ]

    def _name(self, verb: str) -> str | None:
        return None if verb == "create" else self.name


def _write_findings(
    check_id: str, inputs: PostureInputs, targets: list[Target], verbs: tuple[str, ...]
) -> Iterator[FindingDraft]:
    """One draft per tenant and binding that lets the tenant write any of `targets`."""
    for tenant in sorted(inputs.tenants, key=lambda t: t.slug):
        found = [
            g
            for g in effective_permissions(inputs, tenant)
            if any(t.verbs_allowed(g, verbs) for t in targets)
        ]
        for grants in _by_binding(found).values():
            reached = []
            for target in targets:
                allowed = {v for g in grants for v in target.verbs_allowed(g, verbs)}
                if allowed:
                    ordered = [v for v in verbs if v in allowed]
                    reached.append({"object": target.ref(), "purpose": target.purpose,
                                    "verbs": ordered})  # fmt: skip
            if targets[0].name is None and reached[0]["object"] == targets[0].ref():
                reached = reached[:1]  # every node: naming each one adds nothing
            verbs_seen = [v for v in verbs if any(v in r["verbs"] for r in reached)]
            objects = ", ".join(r["object"] for r in reached)
            title = f"may {'/'.join(verbs_seen)} {objects}"
            yield _binding_draft(check_id, tenant, grants, {"objects": reached}, title)


def gpu_config_targets(snapshot: ClusterSnapshot) -> list[Target]:
    """What decides how GPUs are shared: the device-plugin and MIG ConfigMaps and the GPU
    Operator's ClusterPolicy."""
    targets = [
        Target("ConfigMap", "", "configmaps", cm.namespace, cm.name, cm.purpose)
        for cm in sorted(snapshot.configmaps, key=lambda c: (c.namespace, c.name))
        if cm.purpose in SHARING_CONFIGMAP_PURPOSES
    ]
    targets += [
        Target("ClusterPolicy", OPERATOR_GROUP, OPERATOR_RESOURCE, None, p.name, "gpu_operator")
        for p in sorted(snapshot.gpu_operator_policies, key=lambda p: p.name)
    ]
    return targets


@check(
    id="K8S-003",
    title="A tenant principal may patch or update nodes",
    severity="high",
    scope="tenant",
    rationale=(
        "GPU pools are kept apart by node labels and taints. Whoever may patch or update Node "
        "objects can relabel a node into another tenant's pool, remove the taint that keeps "
        "other classes off it, or set `nvidia.com/mig.config` and the device-plugin config "
        "label to repartition its GPUs: a tenant with that right decides where every other "
        "tenant's pods land and how their GPUs are shared."
    ),
    remediation=(
        "Remove the binding in the evidence, or bind the tenant to a ClusterRole that only "
        "reads nodes (`get`, `list`, `watch`). Node labels and taints belong to the platform "
        "team's automation (node-pool configuration); if a tenant needs to steer scheduling, "
        "give it nodeSelectors and tolerations the admission policy allows, never node writes."
    ),
    mappings=("SP800-53:AC-6",),
)
def tenant_may_patch_nodes(inputs: PostureInputs) -> Iterator[FindingDraft]:
    # A rule without resourceNames reaches every node; one with them, only the nodes named.
    targets = [Target("Node", "", "nodes", None, None, "all nodes")]
    targets += [
        Target("Node", "", "nodes", None, n.name, "node")
        for n in sorted(inputs.snapshot.nodes, key=lambda n: n.name)
    ]
    yield from _write_findings("K8S-003", inputs, targets, NODE_WRITE_VERBS)


@check(
    id="K8S-004",
    title="A tenant principal may edit the device-plugin or MIG configuration",
    severity="high",
    scope="tenant",
    rationale=(
        "The device-plugin ConfigMap decides whether GPUs are time-sliced or shared through "
        "MPS and into how many replicas; the mig-parted ConfigMap decides how GPUs are cut "
        "into MIG instances; the GPU Operator's ClusterPolicy points at both and controls the "
        "driver and toolkit on every GPU node. A tenant that may write any of them can turn "
        "hardware isolation into time-slicing for every tenant on those nodes."
    ),
    remediation=(
        "Remove the binding in the evidence, or narrow its role so that it no longer grants "
        "create/update/patch/delete on these ConfigMaps (in the GPU Operator's namespace) or "
        "on `clusterpolicies.nvidia.com`. Changes to GPU sharing go through a sharing request "
        "the platform team approves and applies; tenants keep read access at most."
    ),
    mappings=("SP800-53:AC-6", "SP800-53:CM-5"),
)
def tenant_may_edit_gpu_config(inputs: PostureInputs) -> Iterator[FindingDraft]:
    yield from _write_findings("K8S-004", inputs, gpu_config_targets(inputs.snapshot), EDIT_VERBS)


def operator_namespaces(snapshot: ClusterSnapshot) -> set[str]:
    """Namespaces running GPU components (operator, device plugin, GFD, ...)."""
    return {w.namespace for w in snapshot.workloads if is_gpu_component(w)}


@check(
    id="K8S-005",
    title="A GPU Operator service account is bound from outside its namespace",
    severity="medium",
    scope="tenant",
    rationale=(
        "The GPU Operator's service accounts run privileged pods on every GPU node and hold "
        "cluster-wide rights over nodes, DaemonSets and the ClusterPolicy. A RoleBinding in "
        "another namespace that names one of them is not part of the operator's install: it "
        "means the operator's identity is being reused for something else (a tenant job, a "
        "script holding its token), or that a namespace's admins are shaping what that "
        "identity may do. Either way the most powerful GPU identity is no longer only the "
        "operator's."
    ),
    remediation=(
        "Delete the RoleBinding in the evidence. Whatever needs these rights in that namespace "
        "gets its own service account there, bound to a role with only what it needs; the "
        "operator's service accounts keep only the bindings its chart or OLM bundle creates."
    ),
    mappings=("SP800-53:AC-6",),
)
def operator_account_bound_elsewhere(inputs: PostureInputs) -> Iterator[FindingDraft]:
    operator_ns = operator_namespaces(inputs.snapshot)
    for binding in sorted(inputs.snapshot.bindings, key=_binding_order):
        if binding.kind != "RoleBinding" or binding.namespace is None:
            continue
        named = [
            (s, ns)
            for s in binding.subjects
            if (ns := service_account_namespace(s)) in operator_ns and ns != binding.namespace
        ]
        if not named:
            continue
        tenant = inputs.tenant_of_namespace(binding.namespace)
        accounts = [_subject_label(s) for s, _ in named]
        yield FindingDraft(
            check_id="K8S-005",
            tenant=tenant.slug if tenant else None,
            subject_kind="RoleBinding",
            subject_namespace=binding.namespace,
            subject_name=binding.name,
            evidence={
                "binding": _ref("RoleBinding", binding.namespace, binding.name),
                "namespace_tenant": tenant.slug if tenant else None,
                "role": _ref(binding.role_kind, None, binding.role_name),
                "operator_identities": accounts,
                "operator_namespaces": sorted({ns for _, ns in named}),
                "all_subjects": [_subject_label(s) for s in binding.subjects],
            },
            title=(
                f"RoleBinding {binding.namespace}/{binding.name} binds GPU Operator identity "
                f"{', '.join(accounts)} outside its namespace"
            ),
        )
