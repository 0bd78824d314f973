"""The RBAC evaluation's cost: K8S-003 asks each grant about each resource once, not once per
node, with the same findings (a rule limited to one node's name still reaches that node)."""

from __future__ import annotations

from dataclasses import replace

import posture.rules.k8s.rbac_eval as rbac_eval
from inventory.snapshot import RoleBinding
from posture.rules.registry import run_checks
from tests.posture.builders import gpu_node
from tests.posture.test_rules_rbac import DEVS, cluster_role, crb, rule, world

NODES = tuple(gpu_node(f"gpu-{i:03}") for i in range(300))


def _k8s003(monkeypatch, *rules):
    asked = []
    allows = rbac_eval.rule_allows

    def counting(*args, **kwargs):
        asked.append(args)
        return allows(*args, **kwargs)

    monkeypatch.setattr(rbac_eval, "rule_allows", counting)
    # Grants that reach no node (configmap edits everywhere), and the rules asked about.
    reader = cluster_role("cm-edit", rule(resources=("configmaps",), verbs=("patch",)))
    bindings = [crb(f"cm-{i}", "cm-edit", DEVS) for i in range(3)]
    inputs = world([reader, cluster_role("r", *rules)], [*bindings, crb("b", "r", DEVS)])
    inputs = replace(inputs, snapshot=replace(inputs.snapshot, nodes=NODES))
    found = run_checks(inputs, only=["K8S-003"])
    return found, len(asked)


def test_a_grant_that_reaches_no_node_is_asked_once_per_resource_not_per_node(monkeypatch):
    found, asked = _k8s003(monkeypatch, rule(resources=("nodes",), verbs=("get",)))
    assert found == []
    # Per grant: 2 resources (nodes, nodes/status) x 2 verbs, not 600 targets (a node and its
    # status each) x 2 verbs; the rest is the escalation paths' own questions.
    assert asked < 400


def test_a_rule_limited_to_one_node_still_reaches_it(monkeypatch):
    (draft,) = _k8s003(monkeypatch, rule(verbs=("patch",), names=("gpu-123",)))[0]
    assert [o["object"] for o in draft.evidence["objects"]] == ["Node gpu-123"]
    assert draft.subject_name == "b"


def test_every_subject_that_names_a_tenant_is_found_by_its_index_keys():
    """K8S-003/-004/-008's escalation search asks subject_of_tenant only of the identities
    whose subject_keys meet the tenant's tenant_keys: a subject that names the tenant any way
    (a principal, everyone, an owned or listed service account, however spelt) must never be
    left out by the index."""
    from inventory.snapshot import Subject
    from posture.inputs import TenantInfo
    from tests.posture.builders import trust_class

    tenants = [
        TenantInfo(
            "alpha",
            "Alpha",
            trust_class("internal"),
            ("alpha",),
            ("group:alpha-devs", "user:ana", "user:system:serviceaccount:shared:runner"),
        ),
        TenantInfo("bare", "Bare", trust_class("external"), (), ("group:bare-devs",)),
    ]
    subjects = [
        Subject(kind, name, namespace)
        for kind, name, namespace in [
            ("Group", "alpha-devs", None),
            ("Group", "Alpha-Devs", None),
            ("User", "ana", None),
            ("User", "alpha-devs", None),
            ("Group", "bare-devs", None),
            ("Group", "system:authenticated", None),
            ("Group", "system:unauthenticated", None),
            ("User", "system:anonymous", None),
            ("Group", "system:serviceaccounts", None),
            ("Group", "system:serviceaccounts:alpha", None),
            ("Group", "system:serviceaccounts:shared", None),
            ("Group", "system:serviceaccounts:other", None),
            ("User", "system:serviceaccount:alpha:default", None),
            ("User", "system:serviceaccount:shared:runner", None),
            ("User", "system:serviceaccount:shared:other", None),
            ("ServiceAccount", "default", "alpha"),
            ("ServiceAccount", "runner", "shared"),
            ("ServiceAccount", "builder", "shared"),
            ("ServiceAccount", "default", "other"),
            ("ServiceAccount", "default", None),
        ]
    ]
    names = 0
    for tenant in tenants:
        namespaces = set(tenant.namespaces)
        keys = rbac_eval.tenant_keys(tenant, namespaces)
        for subject in subjects:
            named = rbac_eval.subject_of_tenant(subject, tenant, namespaces) is not None
            names += named
            if named:
                assert keys & set(rbac_eval.subject_keys(subject)), subject
    assert names == 16  # the cases reach every way a subject names a tenant (12 + 4)


def _crowd(count: int):
    """`count` tenants, each with its namespace and group, each group bound to one role."""
    from posture.inputs import TenantInfo
    from tests.posture.builders import inputs, trust_class
    from tests.posture.test_rules_rbac import group, rb

    tenants = tuple(
        TenantInfo(f"t{i}", f"T{i}", trust_class("internal"), (f"ns-{i}",), (f"group:devs-{i}",))
        for i in range(count)
    )
    role = cluster_role("cm-edit", rule(resources=("configmaps",), verbs=("patch",)))
    bindings = tuple(
        rb(f"ns-{i}", f"devs-{i}", "cm-edit", group(f"devs-{i}"), group("nobody"))
        for i in range(count)
    )
    return tenants, inputs(tenants=tenants, roles=(role,), bindings=bindings)


def test_each_tenant_asks_only_the_subjects_that_may_name_it(monkeypatch):
    """effective_permissions asks subject_of_tenant of the few subjects whose subject_keys meet
    the tenant's, not of every subject of every binding for every tenant; each tenant still
    holds exactly what its own binding grants."""
    asked = []
    subject_of_tenant = rbac_eval.subject_of_tenant

    def counting(subject, tenant, namespaces):
        asked.append(subject)
        return subject_of_tenant(subject, tenant, namespaces)

    monkeypatch.setattr(rbac_eval, "subject_of_tenant", counting)
    tenants, world = _crowd(40)
    for i, tenant in enumerate(tenants):
        (grant,) = rbac_eval.effective_permissions(world, tenant)
        assert (grant.subject, grant.binding_name) == (f"Group:devs-{i}", f"devs-{i}")
        assert grant.scope == f"ns-{i}"
    assert len(asked) == 40  # one subject per tenant, not 40 tenants x 80 subjects


def test_each_identitys_reach_is_found_once_per_evaluation_not_once_per_tenant(monkeypatch):
    """The escalation search asks which namespaces each identity's rules hold in once per
    evaluation (_acts: once per grant), not for each tenant again; a tenant that may
    impersonate any user still reaches those holding rights in tenants' namespaces, and not
    those holding rights only where no check looks."""
    import posture.rules.k8s.rbac_escalation as rbac_escalation
    from tests.posture.test_rules_rbac import group, rb, user

    asked = []
    acts = rbac_escalation._acts

    def counting(grant):
        asked.append(grant)
        return acts(grant)

    monkeypatch.setattr(rbac_escalation, "_acts", counting)
    tenants, world = _crowd(30)
    impersonate = cluster_role("imp", rule(resources=("users",), verbs=("impersonate",)))
    bindings = (
        *world.snapshot.bindings,
        *(crb(f"imp-{i}", "imp", group(f"devs-{i}")) for i in range(30)),
        *(rb(f"ns-{i}", f"u-{i}", "cm-edit", user(f"u-{i}")) for i in range(30)),
        *(rb(f"elsewhere-{i}", f"far-{i}", "cm-edit", user(f"far-{i}")) for i in range(30)),
    )
    snapshot = replace(world.snapshot, roles=(*world.snapshot.roles, impersonate))
    world = replace(world, snapshot=replace(snapshot, bindings=bindings))
    for tenant in tenants:
        (paths,) = rbac_escalation.escalations(world, tenant).values()
        assert [p.how for p in paths] == sorted(f"may impersonate User u-{i}" for i in range(30))
    grants = sum(len(h.grants) for h in rbac_escalation._identities(world).values())
    assert len(asked) == grants  # once per grant of the cluster, not once per tenant too


def _many_roles_world():
    """200 namespaced roles and ClusterRoles, each bound; a Role and a ClusterRole sharing a
    name, a RoleBinding whose Role lives in another namespace, a ClusterRoleBinding naming a
    Role (which the API never resolves) and a binding to a missing role."""
    from inventory.snapshot import Role
    from tests.posture.test_rules_rbac import rb

    node_patch = rule(verbs=("get", "patch"))
    roles = [cluster_role(f"noise-{i}", rule(resources=("secrets",))) for i in range(200)]
    roles += [Role("Role", f"ns-{i}", "alpha", (rule(resources=("pods",)),)) for i in range(200)]
    roles += [cluster_role("labeler", node_patch), Role("Role", "labeler", "alpha", ())]
    roles += [Role("Role", "elsewhere", "beta", (node_patch,))]
    bindings = [crb(f"noise-{i}", f"noise-{i}", DEVS) for i in range(200)]
    bindings += [rb("alpha", f"ns-{i}", f"ns-{i}", DEVS, kind="Role") for i in range(200)]
    bindings += [
        crb("labeler", "labeler", DEVS),
        rb("alpha", "elsewhere", "elsewhere", DEVS, kind="Role"),
        RoleBinding("ClusterRoleBinding", "to-a-role", None, "Role", "labeler", (DEVS,)),
        crb("gone", "missing", DEVS),
    ]
    return world(roles, bindings)


def test_each_binding_finds_its_role_by_key_once_per_evaluation(monkeypatch):
    """The roles are indexed once per evaluation (not scanned for every binding, twice: the
    grants and the escalation paths), and the findings are those of a scan."""
    import inventory.rbac as rbac

    checks = ["K8S-003", "K8S-004", "K8S-005", "K8S-008", "DRA-001"]
    indexed = []
    index = rbac_eval.role_index

    def counting(roles):
        indexed.append(1)
        return index(roles)

    monkeypatch.setattr(rbac_eval, "role_index", counting)
    found = run_checks(_many_roles_world(), only=checks)
    assert len(indexed) == 1
    assert [d.subject_name for d in found if d.check_id == "K8S-003"] == ["labeler"]

    # The same findings when every binding scans every role for its key, as before.
    def scan(roles, binding):
        key = {
            ("ClusterRole", "ClusterRoleBinding"): ("ClusterRole", None),
            ("ClusterRole", "RoleBinding"): ("ClusterRole", None),
            ("Role", "RoleBinding"): ("Role", binding.namespace),
        }.get((binding.role_kind, binding.kind))
        wanted = None if key is None else (*key, binding.role_name)
        return next((r for r in roles.values() if (r.kind, r.namespace, r.name) == wanted), None)

    # The escalation paths take the bindings' roles from rbac_eval.bound_roles.
    for module in (rbac, rbac_eval):
        monkeypatch.setattr(module, "find_role", scan)
    assert run_checks(_many_roles_world(), only=checks) == found
