"""Real RBAC constructs the authorizer reads one way and K8S-003/-004 and DRA-001 must read the
same: `*/subresource` rules, aggregation by matchExpressions, anonymous subjects, and the ways a
subject takes another identity's rights (impersonation, running pods where a more privileged
service account lives, service-account tokens, bind/escalate inside one namespace)."""

from __future__ import annotations

import pytest

from inventory.rbac import role_rules, rule_allows
from inventory.snapshot import Role
from inventory.sources.objects import role_from
from posture.rules.registry import run_checks
from tests.posture.test_rules_rbac import (
    DEVS,
    OPS,
    cluster_role,
    crb,
    fired,
    group,
    rb,
    rule,
    sa,
    user,
    world,
)

RBAC = "rbac.authorization.k8s.io"
NODE_PATCH = rule(verbs=("patch",))
OPERATOR_ROLE = cluster_role(
    "gpu-operator",
    rule(verbs=("get", "patch", "update")),
    rule(("",), ("configmaps",), ("*",)),
    rule(("nvidia.com",), ("clusterpolicies",), ("*",)),
)
OPERATOR_BINDING = crb("gpu-operator", "gpu-operator", sa(OPS, "gpu-operator"))


def _fires(check_id: str, roles, bindings) -> list:
    return fired(check_id, roles, bindings)


# --- subresources: `*/status` is every resource's status ----------------------------------------


def test_star_slash_subresource_matches_that_subresource_of_every_resource():
    star_status = rule(resources=("*/status",))
    assert rule_allows(star_status, "patch", "", "nodes/status")
    assert not rule_allows(star_status, "patch", "", "nodes")
    assert not rule_allows(star_status, "patch", "", "nodes/proxy")
    (draft,) = _fires("K8S-003", [cluster_role("r", star_status)], [crb("b", "r", DEVS)])
    assert draft.evidence["objects"][0]["object"] == "every Node (status subresource)"


# --- aggregation: the whole label selector, as the aggregation controller reads it ---------------


def _aggregated(selector: dict) -> Role:
    return role_from(
        {
            "kind": "ClusterRole",
            "metadata": {"name": "gpu-admin"},
            "aggregationRule": {"clusterRoleSelectors": [selector]},
        },
        None,
    )


@pytest.mark.parametrize(
    ("selector", "labels", "selected"),
    [
        ({"matchExpressions": [{"key": "agg", "operator": "Exists"}]}, {"agg": "x"}, True),
        ({"matchExpressions": [{"key": "agg", "operator": "Exists"}]}, {"other": "x"}, False),
        (
            {"matchExpressions": [{"key": "agg", "operator": "In", "values": ["a", "b"]}]},
            {"agg": "b"},
            True,
        ),
        (
            {"matchExpressions": [{"key": "agg", "operator": "In", "values": ["a"]}]},
            {"agg": "b"},
            False,
        ),
        (
            {"matchExpressions": [{"key": "agg", "operator": "NotIn", "values": ["a"]}]},
            {},
            True,
        ),
        ({"matchExpressions": [{"key": "agg", "operator": "DoesNotExist"}]}, {"agg": "a"}, False),
        (
            {
                "matchLabels": {"tier": "gpu"},
                "matchExpressions": [{"key": "agg", "operator": "Exists"}],
            },
            {"agg": "a"},
            False,
        ),
        # An empty selector selects every ClusterRole.
        ({}, {"anything": "x"}, True),
    ],
)
def test_aggregation_reads_match_expressions_and_empty_selectors(selector, labels, selected):
    admin = _aggregated(selector)
    piece = cluster_role("piece", rule(("nvidia.com",), ("clusterpolicies",)), labels=labels)
    rules = [r for r, _ in role_rules(admin, {"gpu-admin": admin, "piece": piece})]
    assert (piece.rules[0] in rules) is selected
    found = _fires("K8S-004", [admin, piece], [crb("b", "gpu-admin", DEVS)])
    assert bool(found) is selected


# --- subjects every tenant is: authenticated, and anonymous requests -----------------------------


@pytest.mark.parametrize(
    ("subject", "fires"),
    [
        (group("system:unauthenticated"), True),
        (user("system:anonymous"), True),
        # A user named like the group is nobody: the group only is everyone.
        (user("system:authenticated"), False),
        # Names compare case-sensitively, as the API server compares them.
        (group("Alpha-Devs"), False),
        (user("system:serviceaccount:alpha:runner"), True),
        (group("system:serviceaccounts:alpha"), True),
    ],
)
def test_subjects_reaching_every_tenant_or_none(subject, fires):
    found = _fires("K8S-003", [cluster_role("r", NODE_PATCH)], [crb("b", "r", subject)])
    assert bool(found) is fires


# --- assumed identities --------------------------------------------------------------------------


def _operator_world(*extra_roles, bindings=()):
    return [OPERATOR_ROLE, *extra_roles], [OPERATOR_BINDING, *bindings]


@pytest.mark.parametrize(
    ("tenant_rule", "bound_in", "path"),
    [
        pytest.param(
            rule(resources=("serviceaccounts",), verbs=("impersonate",), names=("gpu-operator",)),
            OPS,
            f"may impersonate ServiceAccount {OPS}/gpu-operator",
            id="impersonate-sa",
        ),
        pytest.param(
            rule(resources=("serviceaccounts",), verbs=("impersonate",)),
            None,
            f"may impersonate ServiceAccount {OPS}/gpu-operator",
            id="impersonate-any-sa",
        ),
        pytest.param(
            rule(resources=("serviceaccounts/token",), verbs=("create",)),
            OPS,
            f"may create a token for ServiceAccount {OPS}/gpu-operator",
            id="token",
        ),
        pytest.param(
            rule(resources=("pods",), verbs=("create",)),
            OPS,
            f"may run pods in GPU Operator namespace {OPS} (privileged, as its accounts)",
            id="pods-in-operator-namespace",
        ),
        pytest.param(
            rule(("apps",), ("daemonsets",), ("patch",)),
            OPS,
            f"may run pods in GPU Operator namespace {OPS} (privileged, as its accounts)",
            id="patch-operator-daemonset",
        ),
        pytest.param(
            rule(resources=("pods/exec",), verbs=("create",)),
            OPS,
            f"may run pods in GPU Operator namespace {OPS} (privileged, as its accounts)",
            id="exec-into-operator-pods",
        ),
    ],
)
def test_assuming_the_operator_identity_reaches_nodes_and_gpu_config(tenant_rule, bound_in, path):
    roles, bindings = _operator_world(
        cluster_role("r", tenant_rule),
        bindings=[rb(bound_in, "b", "r", DEVS) if bound_in else crb("b", "r", DEVS)],
    )
    for check_id in ("K8S-003", "K8S-004"):
        (draft,) = [d for d in _fires(check_id, roles, bindings) if d.subject_name == "b"]
        assert draft.evidence["escalation"] == [path]
        assert path in draft.title


def test_impersonating_a_user_reaches_what_that_user_holds():
    roles = [cluster_role("node-labeler", NODE_PATCH), cluster_role("r", rule())]
    impersonate = rule(resources=("users",), verbs=("impersonate",), names=("ops-bot",))
    roles.append(cluster_role("imp", impersonate))
    bindings = [crb("labeler", "node-labeler", user("ops-bot")), crb("b", "imp", DEVS)]
    (draft,) = _fires("K8S-003", roles, bindings)
    assert draft.subject_name == "b"
    assert draft.evidence["escalation"] == ["may impersonate User ops-bot"]


def test_pods_in_another_namespace_run_as_its_powerful_service_account():
    roles = [
        cluster_role("node-labeler", NODE_PATCH),
        cluster_role("pods", rule(resources=("pods",), verbs=("create",))),
    ]
    bindings = [
        crb("node-controller", "node-labeler", sa("kube-system", "node-controller")),
        rb("kube-system", "b", "pods", DEVS),
    ]
    (draft,) = _fires("K8S-003", roles, bindings)
    assert draft.evidence["escalation"] == [
        "may run pods in namespace kube-system as ServiceAccount kube-system/node-controller"
    ]


@pytest.mark.parametrize(
    ("tenant_rule", "bound_in"),
    [
        # Its own namespace: its service accounts are its own already.
        (rule(resources=("pods",), verbs=("create",)), "alpha"),
        # A namespace whose service accounts hold nothing of the kind.
        (rule(resources=("pods",), verbs=("create",)), "tools"),
        # Impersonating a service account with read rights only.
        (rule(resources=("serviceaccounts",), verbs=("impersonate",), names=("reader",)), "tools"),
        # Reading pods in the operator's namespace runs nothing there.
        (rule(resources=("pods", "pods/log"), verbs=("get", "list")), OPS),
    ],
)
def test_assumptions_that_gain_nothing_are_no_finding(tenant_rule, bound_in):
    roles, bindings = _operator_world(
        cluster_role("r", tenant_rule),
        cluster_role("reader", rule(verbs=("get", "list"))),
        bindings=[
            rb(bound_in, "b", "r", DEVS),
            crb("tools-reader", "reader", sa("tools", "reader")),
            crb("alpha-labeler", "gpu-operator", sa("alpha", "ci")),
        ],
    )
    assert [d.subject_name for d in _fires("K8S-003", roles, bindings)] == ["alpha-labeler"]


def test_bind_inside_the_operator_namespace_reaches_its_configmaps_not_nodes():
    roles = [
        cluster_role(
            "binder",
            rule((RBAC,), ("clusterroles",), ("bind",), ("cluster-admin",)),
            rule((RBAC,), ("rolebindings",), ("create",)),
        )
    ]
    bindings = [rb(OPS, "b", "binder", DEVS)]
    assert _fires("K8S-003", roles, bindings) == []
    (draft,) = _fires("K8S-004", roles, bindings)
    assert draft.evidence["escalation"] == [
        f"may bind ClusterRole cluster-admin in namespace {OPS}"
    ]
    assert [o["object"] for o in draft.evidence["objects"]] == [
        f"ConfigMap {OPS}/default-mig-parted-config",
        f"ConfigMap {OPS}/time-slicing-config",
    ]


# --- DRA-001: labelling its own namespace by escalation -----------------------------------------


def test_dra001_a_tenant_that_may_bind_cluster_admin_in_its_namespace_may_label_it():
    roles = [
        cluster_role(
            "binder",
            rule((RBAC,), ("clusterroles",), ("bind",)),
            rule((RBAC,), ("rolebindings",), ("create", "get")),
        )
    ]
    found = run_checks(world(roles, [rb("alpha", "b", "binder", DEVS)]), only=["DRA-001"])
    (draft,) = found
    assert (draft.subject_kind, draft.subject_name) == ("RoleBinding", "b")
    assert draft.evidence["escalation"] == ["may bind ClusterRole cluster-admin in namespace alpha"]
    # The built-in `admin` shape (rolebindings without bind) is not a path.
    admin_like = [cluster_role("binder", rule((RBAC,), ("rolebindings", "roles"), ("create",)))]
    assert run_checks(world(admin_like, [rb("alpha", "b", "binder", DEVS)]), only=["DRA-001"]) == []


# --- K8S-004: every way to change the GPU Operator's configuration -------------------------------


def test_deletecollection_on_operator_configmaps_is_an_edit_named_objects_are_not():
    wipe = cluster_role("r", rule(("",), ("configmaps",), ("deletecollection",)))
    (draft,) = _fires("K8S-004", [wipe], [rb(OPS, "b", "r", DEVS)])
    assert {tuple(o["verbs"]) for o in draft.evidence["objects"]} == {("deletecollection",)}
    # A collection request names no object: a rule limited to names never allows it.
    named = cluster_role(
        "r", rule(("",), ("configmaps",), ("deletecollection",), ("time-slicing-config",))
    )
    assert _fires("K8S-004", [named], [rb(OPS, "b", "r", DEVS)]) == []


def test_patching_nvidiadrivers_is_editing_the_gpu_operator_configuration():
    driver = cluster_role("r", rule(("nvidia.com",), ("nvidiadrivers",), ("patch", "get")))
    (draft,) = _fires("K8S-004", [driver], [crb("b", "r", DEVS)])
    assert draft.evidence["objects"] == [
        {"object": "every NVIDIADriver", "purpose": "gpu_operator", "verbs": ["patch"]}
    ]
    # Another group's resource of the same name is not the operator's.
    other = cluster_role("r", rule(("example.com",), ("nvidiadrivers",), ("patch",)))
    assert _fires("K8S-004", [other], [crb("b", "r", DEVS)]) == []


@pytest.mark.parametrize(
    ("names", "fires"),
    [(("team-settings",), False), (("time-slicing-config",), True)],
)
def test_k8s004_resource_names_reach_only_the_configmap_named(names, fires):
    editor = cluster_role("r", rule(("",), ("configmaps",), ("update", "patch"), names))
    assert bool(_fires("K8S-004", [editor], [rb(OPS, "b", "r", DEVS)])) is fires
    # A RoleBinding in the tenant's own namespace never reaches the operator's namespace.
    assert _fires("K8S-004", [editor], [rb("alpha", "b", "r", DEVS)]) == []


@pytest.mark.parametrize(
    ("subject", "fires"),
    [
        (sa("ci", "alpha-runner"), True),
        (user("system:serviceaccount:ci:alpha-runner"), True),
        (group("system:serviceaccounts:ci"), True),
        (group("system:serviceaccounts"), True),
        (sa("ci", "beta-runner"), False),
        (group("system:serviceaccounts:tools"), False),
    ],
)
def test_a_service_account_the_tenant_lists_is_its_however_a_binding_spells_it(subject, fires):
    from dataclasses import replace

    from tests.posture.test_rules_rbac import ALPHA

    # A tenant without namespaces of its own whose CI runs as an account in a shared namespace.
    tenant = replace(
        ALPHA, namespaces=(), principals=("user:system:serviceaccount:ci:alpha-runner",)
    )
    roles, bindings = [cluster_role("r", NODE_PATCH)], [crb("b", "r", subject)]
    world_ = world(roles, bindings)
    world_ = type(world_)(world_.cluster, world_.snapshot, (tenant,))
    found = run_checks(world_, only=["K8S-003"])
    assert bool(found) is fires


def test_many_paths_are_all_in_evidence_and_the_first_few_in_the_title():
    roles = [
        cluster_role("node-labeler", NODE_PATCH),
        cluster_role("pods", rule(resources=("pods",), verbs=("create",))),
    ]
    controllers = [f"c{i}" for i in range(5)]
    bindings = [crb(f"crb-{c}", "node-labeler", sa("kube-system", c)) for c in controllers]
    (draft,) = _fires("K8S-003", roles, [*bindings, rb("kube-system", "b", "pods", DEVS)])
    assert len(draft.evidence["escalation"]) == 5
    assert draft.title.count("may run pods in namespace kube-system as") == 3
    assert "; and 2 more)" in draft.title


def test_dra001_one_binding_reaching_every_tenant_is_one_finding_for_all():
    from dataclasses import replace

    from tests.posture.test_rules_rbac import ALPHA

    beta = replace(ALPHA, slug="beta", name="Beta", namespaces=("beta",), principals=())
    labeler = cluster_role("ns-labeler", rule(resources=("namespaces",), verbs=("patch",)))
    world_ = world([labeler], [crb("everyone", "ns-labeler", group("system:authenticated"))])
    world_ = type(world_)(world_.cluster, world_.snapshot, (ALPHA, beta))
    (draft,) = run_checks(world_, only=["DRA-001"])
    assert (draft.subject_kind, draft.subject_name) == ("ClusterRoleBinding", "everyone")
    assert set(draft.tenants) == {"alpha", "beta"}
    assert draft.evidence["namespaces_by_tenant"] == [
        {"tenant": "alpha", "namespaces": ["alpha"]},
        {"tenant": "beta", "namespaces": ["beta"]},
    ]


def test_a_gpu_component_in_a_tenants_namespace_does_not_make_it_the_operators():
    from dataclasses import replace

    from inventory.snapshot import Workload
    from tests.posture.builders import gpu_node, inputs
    from tests.posture.test_rules_rbac import ALPHA

    exporter = Workload(
        "DaemonSet",
        "beta",
        "nvidia-dcgm-exporter",
        images={"e": "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.5"},
    )
    beta = replace(ALPHA, slug="beta", name="Beta", namespaces=("beta",), principals=())
    world_ = inputs(
        nodes=(gpu_node("gpu-1"),),
        tenants=(ALPHA, beta),
        roles=(cluster_role("pods", rule(resources=("pods",), verbs=("create",))),),
        bindings=(rb("beta", "b", "pods", DEVS),),
        workloads=(exporter,),
    )
    assert run_checks(world_, only=["K8S-003", "K8S-004"]) == []
