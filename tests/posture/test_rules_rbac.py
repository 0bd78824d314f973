"""The RBAC evaluator and K8S-003..005 over hand-built read models, then the demo world."""

from __future__ import annotations

from dataclasses import replace

import pytest
import yaml

import posture.rules  # noqa: F401
import posture.rules.k8s.rbac  # noqa: F401
from inventory.snapshot import (
    ConfigMap,
    GpuOperatorPolicy,
    PolicyRule,
    Role,
    RoleBinding,
    Subject,
    Workload,
)
from posture.inputs import PostureInputs, TenantInfo
from posture.rules.k8s.rbac import can, effective_permissions, role_rules
from posture.rules.registry import run_checks
from tests.posture.builders import gpu_node, inputs, trust_class

OPS = "gpu-operator"
ALPHA = TenantInfo(
    "alpha", "Alpha", trust_class("internal"), ("alpha",), ("group:alpha-devs", "user:ana")
)
AGG_LABEL = {"rbac.example.com/aggregate-to-gpu-admin": "true"}


def rule(groups=("",), resources=("nodes",), verbs=("patch",), names=()) -> PolicyRule:
    return PolicyRule(tuple(groups), tuple(resources), tuple(verbs), tuple(names))


def cluster_role(name: str, *rules: PolicyRule, labels=None, aggregate=()) -> Role:
    return Role("ClusterRole", name, None, rules, tuple(aggregate), labels or {})


def crb(name: str, role: str, *subjects: Subject) -> RoleBinding:
    return RoleBinding("ClusterRoleBinding", name, None, "ClusterRole", role, subjects)


def rb(ns: str, name: str, role: str, *subjects: Subject, kind="ClusterRole") -> RoleBinding:
    return RoleBinding("RoleBinding", name, ns, kind, role, subjects)


def group(name: str) -> Subject:
    return Subject("Group", name)


def user(name: str) -> Subject:
    return Subject("User", name)


def sa(ns: str, name: str = "default") -> Subject:
    return Subject("ServiceAccount", name, ns)


DEVS = group("alpha-devs")
SHARING_CMS = (
    ConfigMap(OPS, "time-slicing-config", "device_plugin"),
    ConfigMap(OPS, "default-mig-parted-config", "mig_parted"),
)
OPERATOR_WORKLOAD = Workload(
    "DaemonSet", OPS, "device-plugin", images={"p": "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"}
)


def world(roles=(), bindings=(), **snapshot) -> PostureInputs:
    return inputs(
        nodes=(gpu_node("gpu-1"),),
        tenants=(ALPHA,),
        namespaces=("alpha", "beta", OPS, "tools"),
        roles=tuple(roles),
        bindings=tuple(bindings),
        configmaps=SHARING_CMS,
        gpu_operator_policies=(GpuOperatorPolicy("cluster-policy"),),
        workloads=(OPERATOR_WORKLOAD,),
        **snapshot,
    )


def fired(check_id: str, roles=(), bindings=()) -> list:
    return run_checks(world(roles, bindings), only=[check_id])


# --- the evaluator ----------------------------------------------------------------------------


def test_rolebinding_to_a_clusterrole_grants_only_in_its_namespace():
    roles = [cluster_role("cm-edit", rule(resources=("configmaps",), verbs=("update",)))]
    w = world(roles, [rb("alpha", "b", "cm-edit", DEVS)])
    (grant,) = effective_permissions(w, ALPHA)
    assert grant.scope == "alpha" and grant.role_kind == "ClusterRole"
    assert can(w, ALPHA, "update", "", "configmaps", "alpha", "x") == [grant]
    assert can(w, ALPHA, "update", "", "configmaps", OPS, "x") == []
    assert can(w, ALPHA, "update", "", "configmaps") == []  # a cluster-wide request


def test_resource_names_never_allow_create_or_collections():
    roles = [cluster_role("r", rule(resources=("configmaps",), verbs=("*",), names=("a",)))]
    w = world(roles, [crb("b", "r", DEVS)])
    assert can(w, ALPHA, "update", "", "configmaps", OPS, "a")
    assert not can(w, ALPHA, "update", "", "configmaps", OPS, "b")
    assert not can(w, ALPHA, "create", "", "configmaps", OPS)
    assert not can(w, ALPHA, "list", "", "configmaps", OPS)


def test_aggregated_clusterrole_takes_matching_roles_rules_once_transitively():
    base = rule(verbs=("get",))
    inner = cluster_role("inner", rule(), labels={"tier": "inner"})
    middle = cluster_role("middle", base, labels=AGG_LABEL, aggregate=({"tier": "inner"},))
    top = cluster_role("gpu-admin", base, aggregate=(AGG_LABEL,))
    unlabelled = cluster_role("other", rule(verbs=("delete",)))
    roles = {r.name: r for r in (inner, middle, top, unlabelled)}
    assert role_rules(top, roles) == [(base, None), (rule(), "inner")]
    # matchExpressions-only selectors arrive empty: they aggregate nothing.
    assert role_rules(cluster_role("x", aggregate=({},)), roles) == []


def test_role_kind_must_match_the_binding():
    ns_role = Role("Role", "edit", "alpha", (rule(resources=("configmaps",)),))
    w = world(
        [ns_role],
        [rb("alpha", "ok", "edit", DEVS, kind="Role"), rb("beta", "no", "edit", DEVS, kind="Role")],
    )
    assert [g.binding_name for g in effective_permissions(w, ALPHA)] == ["ok"]


# --- K8S-003 ----------------------------------------------------------------------------------

NODE_PATCH = cluster_role("node-labeler", rule(verbs=("get", "patch")))


@pytest.mark.parametrize(
    ("roles", "bindings", "fires"),
    [
        pytest.param([NODE_PATCH], [crb("b", "node-labeler", DEVS)], True, id="group"),
        pytest.param([NODE_PATCH], [crb("b", "node-labeler", user("ana"))], True, id="user"),
        pytest.param([NODE_PATCH], [crb("b", "node-labeler", user("bob"))], False, id="other-user"),
        pytest.param(
            [NODE_PATCH], [crb("b", "node-labeler", group("ana"))], False, id="user-as-group"
        ),
        pytest.param(
            [NODE_PATCH], [crb("b", "node-labeler", group("beta-devs"))], False, id="other-group"
        ),
        pytest.param(
            [NODE_PATCH], [crb("b", "node-labeler", sa("alpha", "ci"))], True, id="tenant-sa"
        ),
        # beta is claimed by no tenant: its accounts are the unclassified party's (fail closed).
        pytest.param(
            [NODE_PATCH], [crb("b", "node-labeler", sa("beta"))], True, id="unclassified-sa"
        ),
        pytest.param([NODE_PATCH], [crb("b", "node-labeler", sa(OPS))], False, id="platform-sa"),
        pytest.param(
            [NODE_PATCH],
            [crb("b", "node-labeler", group("system:serviceaccounts:alpha"))],
            True,
            id="sa-group",
        ),
        pytest.param(
            [NODE_PATCH],
            [crb("b", "node-labeler", group("system:serviceaccounts:beta"))],
            True,
            id="unclassified-sa-group",
        ),
        pytest.param(
            [NODE_PATCH],
            [crb("b", "node-labeler", user("system:serviceaccount:alpha:ci"))],
            True,
            id="sa-as-user",
        ),
        pytest.param(
            [NODE_PATCH],
            [crb("b", "node-labeler", group("system:authenticated"))],
            True,
            id="everyone",
        ),
        pytest.param(
            [NODE_PATCH],
            [rb("alpha", "b", "node-labeler", DEVS)],
            False,
            id="rolebinding-is-namespaced",
        ),
        pytest.param([NODE_PATCH], [crb("b", "missing", DEVS)], False, id="dangling-binding"),
        pytest.param(
            [cluster_role("r", rule(verbs=("*",)))], [crb("b", "r", DEVS)], True, id="verbs-star"
        ),
        pytest.param(
            [cluster_role("r", rule(resources=("*",)))],
            [crb("b", "r", DEVS)],
            True,
            id="resources-star",
        ),
        pytest.param(
            [cluster_role("r", rule(groups=("*",)))], [crb("b", "r", DEVS)], True, id="groups-star"
        ),
        pytest.param(
            [cluster_role("r", rule(("*",), ("*",), ("*",)))],
            [crb("b", "r", DEVS)],
            True,
            id="cluster-admin",
        ),
        pytest.param(
            [cluster_role("r", rule(verbs=("update",)))], [crb("b", "r", DEVS)], True, id="update"
        ),
        pytest.param(
            [cluster_role("r", rule(verbs=("get", "list", "watch")))],
            [crb("b", "r", DEVS)],
            False,
            id="read-only",
        ),
        pytest.param(
            [cluster_role("r", rule(groups=("apps",)))],
            [crb("b", "r", DEVS)],
            False,
            id="wrong-group",
        ),
        pytest.param(
            # A status update keeps only the old spec: the labels it is sent are written.
            [cluster_role("r", rule(resources=("nodes/status",)))],
            [crb("b", "r", DEVS)],
            True,
            id="status-subresource",
        ),
        pytest.param(
            [cluster_role("r", rule(names=("gpu-1",)))],
            [crb("b", "r", DEVS)],
            True,
            id="named-node",
        ),
        pytest.param(
            [cluster_role("r", rule(names=("gone",)))],
            [crb("b", "r", DEVS)],
            False,
            id="named-absent-node",
        ),
        pytest.param(
            [
                cluster_role("gpu-admin", aggregate=(AGG_LABEL,)),
                cluster_role("w", rule(), labels=AGG_LABEL),
            ],
            [crb("b", "gpu-admin", DEVS)],
            True,
            id="aggregated",
        ),
        pytest.param(
            [
                cluster_role("gpu-admin", aggregate=(AGG_LABEL,)),
                cluster_role("w", rule(), labels={"x": "y"}),
            ],
            [crb("b", "gpu-admin", DEVS)],
            False,
            id="aggregation-not-matching",
        ),
    ],
)
def test_k8s003(roles, bindings, fires):
    assert bool(fired("K8S-003", roles, bindings)) is fires


@pytest.mark.parametrize("check_id", ["K8S-003", "K8S-004", "K8S-008", "DRA-001"])
def test_the_platform_class_tenants_principals_administer_by_design(check_id):
    """The platform team modelled as a tenant of the platform class (DESIGN §3): its admins
    bound to cluster-admin and its controllers' accounts are the platform's, not a tenant
    reaching others. The same binding to an internal tenant's group fires."""
    platform = TenantInfo(
        "ops", "Ops", trust_class("platform"), ("tools",), ("group:platform-admins",)
    )
    admin = (cluster_role("cluster-admin", rule(("*",), ("*",), ("*",))),)

    def found(bound: Subject) -> list:
        world_ = replace(
            world(admin, (crb("admins", "cluster-admin", bound),)),
            tenants=(ALPHA, platform),
        )
        return run_checks(world_, only=[check_id])

    assert found(group("platform-admins")) == []
    assert found(sa("tools", "karpenter")) == []
    assert found(DEVS), check_id


RBAC = "rbac.authorization.k8s.io"


@pytest.mark.parametrize(
    ("rules", "path"),
    [
        (
            [rule(resources=("users", "groups"), verbs=("impersonate",))],
            "may impersonate group system:masters",
        ),
        (
            [
                rule((RBAC,), ("clusterroles",), ("bind",), ("cluster-admin",)),
                rule((RBAC,), ("clusterrolebindings",), ("create",)),
            ],
            "may bind ClusterRole cluster-admin to itself with bind and create",
        ),
        (
            [rule((RBAC,), ("clusterroles",), ("escalate", "update"))],
            "may add any rule to ClusterRoles with escalate and update",
        ),
        # Not escalations: impersonating only its own group, bind without create, a view role.
        ([rule(resources=("groups",), verbs=("impersonate",), names=("alpha-devs",))], None),
        ([rule((RBAC,), ("clusterroles",), ("bind",))], None),
        ([rule((RBAC,), ("clusterroles",), ("escalate",), ("view",))], None),
    ],
)
def test_k8s003_and_k8s004_follow_rbac_escalation_paths(rules, path):
    roles, bindings = [cluster_role("r", *rules)], [crb("b", "r", DEVS)]
    for check_id in ("K8S-003", "K8S-004"):
        drafts = fired(check_id, roles, bindings)
        if path is None:
            assert drafts == []
            continue
        (draft,) = drafts
        assert draft.evidence["escalation"] == [path]
        assert f"by escalation ({path})" in draft.title


def test_escalation_through_a_rolebinding_reaches_no_node():
    # Impersonation and ClusterRole binding are cluster-wide requests: a RoleBinding's
    # namespace-scoped grant of them authorises none.
    roles = [cluster_role("r", rule(resources=("groups",), verbs=("impersonate",)))]
    assert fired("K8S-003", roles, [rb("alpha", "b", "r", DEVS)]) == []


def test_k8s003_status_subresource_is_named_as_such():
    role = cluster_role("r", rule(resources=("nodes/status",), verbs=("patch",)))
    (draft,) = fired("K8S-003", [role], [crb("b", "r", DEVS)])
    assert draft.evidence["objects"] == [
        {
            "object": "every Node (status subresource)",
            "purpose": "labels of all nodes",
            "verbs": ["patch"],
        }
    ]


def test_k8s003_evidence_names_subject_binding_role_rule():
    (draft,) = fired("K8S-003", [NODE_PATCH], [crb("analytics-node-labeler", "node-labeler", DEVS)])
    assert (draft.tenants, draft.subject_kind, draft.subject_name) == (
        ("alpha",),
        "ClusterRoleBinding",
        "analytics-node-labeler",
    )
    (grant,) = draft.evidence["grants"]
    assert grant["subject"] == "Group:alpha-devs"
    assert grant["binding"] == "ClusterRoleBinding analytics-node-labeler"
    assert grant["role"] == "ClusterRole node-labeler"
    assert grant["rule"]["verbs"] == ["get", "patch"] and grant["scope"] == "cluster"
    assert draft.evidence["objects"] == [
        {"object": "every Node", "purpose": "all nodes", "verbs": ["patch"]}
    ]
    assert "Group:alpha-devs of tenant alpha may patch every Node" in draft.title


def test_k8s003_a_binding_reaching_every_tenant_is_one_finding_for_all():
    beta = TenantInfo("beta", "Beta", trust_class("external"), ("beta",), ("group:beta-devs",))
    everyone = crb("b", "node-labeler", group("system:authenticated"))
    two = replace(world([NODE_PATCH], [everyone]), tenants=(ALPHA, beta))
    (draft,) = run_checks(two, only=["K8S-003"])
    assert draft.tenants == ("alpha", "beta")
    assert (draft.subject_kind, draft.subject_name) == ("ClusterRoleBinding", "b")
    assert draft.evidence["subjects_by_tenant"] == [
        {"tenant": "alpha", "subjects": ["Group:system:authenticated"]},
        {"tenant": "beta", "subjects": ["Group:system:authenticated"]},
    ]
    assert len(draft.evidence["grants"]) == 1  # the same grant, listed once
    assert "tenants alpha, beta may patch every Node" in draft.title


def test_k8s003_one_finding_per_binding_listing_each_subject():
    bindings = [
        crb("b1", "node-labeler", DEVS, user("ana")),
        crb("b2", "node-labeler", sa("alpha")),
    ]
    drafts = fired("K8S-003", [NODE_PATCH], bindings)
    assert [(d.subject_name, d.evidence["subjects"]) for d in drafts] == [
        ("b1", ["Group:alpha-devs", "User:ana"]),
        ("b2", ["ServiceAccount:alpha/default"]),
    ]


# --- K8S-004 ----------------------------------------------------------------------------------

CM_EDIT = cluster_role("cm-edit", rule(resources=("configmaps",), verbs=("get", "update")))


def cm_rule(verbs=("update",), names=()) -> Role:
    return cluster_role("r", rule(resources=("configmaps",), verbs=verbs, names=names))


def policy_rule(verbs=("patch",)) -> Role:
    return cluster_role("r", rule(("nvidia.com",), ("clusterpolicies",), verbs))


@pytest.mark.parametrize(
    ("roles", "bindings", "fires"),
    [
        pytest.param(
            [CM_EDIT], [rb(OPS, "b", "cm-edit", DEVS)], True, id="rolebinding-in-operator-ns"
        ),
        pytest.param([CM_EDIT], [rb("alpha", "b", "cm-edit", DEVS)], False, id="own-namespace"),
        pytest.param(
            [CM_EDIT],
            [rb("tools", "b", "cm-edit", DEVS)],
            False,
            id="namespace-without-sharing-cms",
        ),
        pytest.param([CM_EDIT], [crb("b", "cm-edit", DEVS)], True, id="clusterrolebinding"),
        pytest.param(
            [CM_EDIT], [rb(OPS, "b", "cm-edit", group("beta-devs"))], False, id="other-group"
        ),
        pytest.param([CM_EDIT], [rb(OPS, "b", "cm-edit", sa("alpha", "ci"))], True, id="tenant-sa"),
        pytest.param(
            [cm_rule(("get", "list", "watch"))], [crb("b", "r", DEVS)], False, id="read-only"
        ),
        pytest.param([cm_rule(("delete",))], [crb("b", "r", DEVS)], True, id="delete"),
        pytest.param([cm_rule(("create",))], [rb(OPS, "b", "r", DEVS)], True, id="create"),
        pytest.param(
            [cm_rule(("create",), ("time-slicing-config",))],
            [rb(OPS, "b", "r", DEVS)],
            False,
            id="create-by-name",
        ),
        pytest.param(
            [cm_rule(names=("app-settings",))],
            [rb(OPS, "b", "r", DEVS)],
            False,
            id="names-other-cms",
        ),
        pytest.param(
            [cm_rule(names=("time-slicing-config",))],
            [rb(OPS, "b", "r", DEVS)],
            True,
            id="names-device-plugin-cm",
        ),
        pytest.param(
            [cm_rule(names=("default-mig-parted-config",))],
            [rb(OPS, "b", "r", DEVS)],
            True,
            id="names-mig-cm",
        ),
        pytest.param(
            [cluster_role("r", rule(("*",), ("*",), ("*",)))],
            [crb("b", "r", DEVS)],
            True,
            id="cluster-admin",
        ),
        pytest.param([policy_rule()], [crb("b", "r", DEVS)], True, id="clusterpolicy"),
        pytest.param(
            [policy_rule()], [rb(OPS, "b", "r", DEVS)], False, id="clusterpolicy-via-rolebinding"
        ),
        pytest.param(
            [policy_rule(("get", "list"))], [crb("b", "r", DEVS)], False, id="clusterpolicy-read"
        ),
        pytest.param(
            [cluster_role("r", rule(("",), ("clusterpolicies",), ("*",)))],
            [crb("b", "r", DEVS)],
            False,
            id="clusterpolicy-wrong-group",
        ),
        pytest.param(
            [Role("Role", "cm", OPS, (rule(resources=("configmaps",), verbs=("patch",)),))],
            [rb(OPS, "b", "cm", DEVS, kind="Role")],
            True,
            id="namespaced-role",
        ),
        pytest.param(
            [
                cluster_role("gpu-admin", aggregate=(AGG_LABEL,)),
                cluster_role("w", rule(resources=("configmaps",)), labels=AGG_LABEL),
            ],
            [rb(OPS, "b", "gpu-admin", DEVS)],
            True,
            id="aggregated",
        ),
    ],
)
def test_k8s004(roles, bindings, fires):
    assert bool(fired("K8S-004", roles, bindings)) is fires


def test_k8s004_evidence_lists_each_object_and_its_verbs():
    roles = [cm_rule(("update", "patch"), ("time-slicing-config",))]
    (draft,) = fired("K8S-004", roles, [rb(OPS, "research-sharing-config", "r", DEVS)])
    assert (draft.subject_kind, draft.subject_namespace) == ("RoleBinding", OPS)
    assert draft.evidence["objects"] == [
        {
            "object": "ConfigMap gpu-operator/time-slicing-config",
            "purpose": "device_plugin",
            "verbs": ["update", "patch"],
        }
    ]
    assert draft.evidence["grants"][0]["rule"]["resourceNames"] == ["time-slicing-config"]
    assert draft.evidence["grants"][0]["scope"] == "namespace gpu-operator"


# --- K8S-005 ----------------------------------------------------------------------------------

OPERATOR_SA = sa(OPS, "gpu-operator")


@pytest.mark.parametrize(
    ("binding", "tenant"),
    [
        pytest.param(rb("alpha", "b", "edit", OPERATOR_SA), "alpha", id="tenant-namespace"),
        pytest.param(rb("tools", "b", "edit", OPERATOR_SA), None, id="platform-namespace"),
        pytest.param(rb("alpha", "b", "edit", DEVS, OPERATOR_SA), "alpha", id="with-tenant-group"),
        pytest.param(
            rb("alpha", "b", "edit", group(f"system:serviceaccounts:{OPS}")), "alpha", id="sa-group"
        ),
        pytest.param(
            rb("alpha", "b", "edit", user(f"system:serviceaccount:{OPS}:gpu-operator")),
            "alpha",
            id="sa-user",
        ),
        pytest.param(rb(OPS, "b", "edit", OPERATOR_SA), "none", id="own-namespace"),
        pytest.param(crb("b", "gpu-operator", OPERATOR_SA), "none", id="the-operators-own-crb"),
        pytest.param(rb("alpha", "b", "edit", sa("beta")), "none", id="not-an-operator-sa"),
        pytest.param(
            rb("alpha", "b", "edit", sa("tools", "gpu-operator")), "none", id="same-name-other-ns"
        ),
    ],
)
def test_k8s005(binding, tenant):
    drafts = fired("K8S-005", bindings=[binding])
    if tenant == "none":
        assert drafts == []
    else:
        (draft,) = drafts
        assert draft.tenants == ((tenant,) if tenant else ())
        assert (draft.subject_kind, draft.subject_name) == ("RoleBinding", "b")
        assert draft.evidence["operator_namespaces"] == [OPS]


# --- the demo world ---------------------------------------------------------------------------


def demo_worlds() -> dict[str, PostureInputs]:
    """Each demo cluster's read model with the tenants of demo/tenants.yaml."""
    from demo.world import TENANTS_FILE, build_clusters
    from inventory.sources.normalise import normalise

    tenants = tuple(
        TenantInfo(
            t["slug"],
            t["name"],
            trust_class(t["trust_class"]),
            tuple(t["namespaces"]),
            tuple(t["principals"]),
        )
        for t in yaml.safe_load(TENANTS_FILE.read_text())["tenants"]
    )
    return {
        name: PostureInputs(name, normalise(items), tenants)
        for name, items in build_clusters().items()
    }


@pytest.fixture(scope="module")
def demo() -> dict[str, PostureInputs]:
    return demo_worlds()


def _found(world: PostureInputs, check_id: str) -> list[tuple[str | None, str, str]]:
    return [(d.tenants, d.subject_namespace, d.subject_name) for d in run_checks(world, [check_id])]


def test_demo_world_rbac(demo):
    # Research may write Secrets in gpu-operator (to rotate a pull secret): it may mint the
    # operator's service-account token and act as it (an escalation through that binding).
    assert _found(demo["prod-east"], "K8S-003") == [
        (("analytics",), "", "analytics-node-labeler"),
        (("research",), "gpu-operator", "research-ngc-secret"),
    ]
    # Research only reads nodes there, but it may impersonate system:masters: an escalation.
    impersonator = [(("research",), "", "research-ci-impersonator")]
    assert _found(demo["neo-west"], "K8S-003") == impersonator
    assert _found(demo["neo-west"], "K8S-004") == impersonator
    token, draft = run_checks(demo["prod-east"], ["K8S-004"])
    assert token.subject_name == "research-ngc-secret"
    assert (draft.tenants, draft.subject_name) == (("research",), "research-sharing-config")
    assert draft.evidence["subjects"] == ["Group:research-ml"]
    assert {o["object"] for o in draft.evidence["objects"]} == {
        "ConfigMap gpu-operator/time-slicing-config",
        "ConfigMap gpu-operator/default-mig-parted-config",
    }
    # The operator's own ClusterRoleBinding is its install, not a borrowed identity.
    assert _found(demo["prod-east"], "K8S-005") == _found(demo["neo-west"], "K8S-005") == []
    # K8S-008: analytics (internal) may edit the sensitive clinical namespace: high (DESIGN §5;
    # clinical's class weight raises its risk), the sensitive class said.
    draft, token = run_checks(demo["prod-east"], ["K8S-008"])
    assert (draft.tenants, draft.subject_namespace, draft.subject_name) == (
        ("analytics", "clinical"),
        "clinical-imaging",
        "analytics-dashboards",
    )
    assert draft.severity == "" and draft.evidence["sensitive_class"] is True
    # As the operator's account research writes in every tenant's namespace.
    assert token.subject_name == "research-ngc-secret"
    assert {"clinical", "orbital", "analytics"} <= set(token.tenants)
    # Impersonating any group lets research act in every tenant's namespace there.
    ((tenants, _, name),) = _found(demo["neo-west"], "K8S-008")
    assert name == "research-ci-impersonator" and "research" in tenants and len(tenants) > 2
