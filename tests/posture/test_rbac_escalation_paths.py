"""Identity takeovers K8S-003/-004 count beyond pods and impersonation: legacy service-account
token Secrets, custom resources whose controllers make pods, `get pods/exec` before Kubernetes
1.35, chains of takeovers; and K8S-004 when the GPU configuration itself was not seen."""

from __future__ import annotations

from dataclasses import replace

import pytest

from inventory.snapshot import Workload
from posture.rules.registry import run_checks
from tests.posture.test_rules_rbac import (
    DEVS,
    OPS,
    cluster_role,
    crb,
    group,
    rb,
    rule,
    sa,
    user,
    world,
)

NODE_PATCH = cluster_role("node-labeler", rule(verbs=("patch",)))
# A service account elsewhere that may relabel every node: the identity to take.
DEPLOYER = crb("deployer-nodes", "node-labeler", sa("tools", "deployer"))


def _k8s003(*tenant_rules, bound_in="tools", nodes=None, extra_roles=(), extra_bindings=()):
    roles = [NODE_PATCH, cluster_role("r", *tenant_rules), *extra_roles]
    mine = rb(bound_in, "b", "r", DEVS) if bound_in else crb("b", "r", DEVS)
    bindings = [DEPLOYER, mine, *extra_bindings]
    inputs = world(roles, bindings)
    if nodes is not None:
        inputs = replace(inputs, snapshot=replace(inputs.snapshot, nodes=tuple(nodes)))
    return [d for d in run_checks(inputs, only=["K8S-003"]) if d.subject_name == "b"]


# --- legacy service-account token Secrets --------------------------------------------------------


def test_creating_and_reading_secrets_mints_a_token_for_any_account_there():
    (draft,) = _k8s003(rule(resources=("secrets",), verbs=("create", "get")))
    assert draft.evidence["escalation"] == [
        "may create a service-account token Secret (and read it) for ServiceAccount tools/deployer"
    ]


def test_the_reader_may_be_another_rule_limited_to_the_name_the_author_picks():
    found = _k8s003(
        rule(resources=("secrets",), verbs=("create",)),
        rule(resources=("secrets",), verbs=("watch",), names=("mine",)),
    )
    assert len(found) == 1


@pytest.mark.parametrize(
    "tenant_rule",
    [
        # Created but never read back: the token stays in the Secret.
        rule(resources=("secrets",), verbs=("create",)),
        # Read only: existing token Secrets are not read by the snapshot, none assumed.
        rule(resources=("secrets",), verbs=("get", "list", "watch")),
        # Created by name only: resourceNames never allow create.
        rule(resources=("secrets",), verbs=("create", "get"), names=("x",)),
    ],
)
def test_secrets_without_both_halves_take_no_identity(tenant_rule):
    assert _k8s003(tenant_rule) == []


# --- custom resources whose controllers make pods ------------------------------------------------


@pytest.mark.parametrize(
    ("group", "resource", "verb"),
    [
        ("argoproj.io", "workflows", "create"),
        ("argoproj.io", "cronworkflows", "patch"),
        ("tekton.dev", "taskruns", "create"),
        ("tekton.dev", "pipelineruns", "create"),
        ("sparkoperator.k8s.io", "sparkapplications", "create"),
        ("kubeflow.org", "pytorchjobs", "create"),
        ("kubeflow.org", "mpijobs", "create"),
        ("trainer.kubeflow.org", "trainjobs", "create"),
        ("ray.io", "rayclusters", "create"),
        ("ray.io", "rayjobs", "create"),
        ("jobset.x-k8s.io", "jobsets", "create"),
        ("leaderworkerset.x-k8s.io", "leaderworkersets", "create"),
    ],
)
def test_custom_resources_run_pods_as_an_account_of_their_namespace(group, resource, verb):
    (draft,) = _k8s003(rule((group,), (resource,), (verb,)))
    assert draft.evidence["escalation"] == [
        f"may run pods through {resource}.{group} (its controller was not seen running) in "
        "namespace tools as ServiceAccount tools/deployer"
    ]


def test_a_custom_resource_path_whose_controller_runs_says_no_more():
    controller = Workload(
        "Deployment",
        "argo",
        "workflow-controller",
        images={"c": "quay.io/argoproj/workflow-controller:v3.6.2"},
    )
    inputs = world(
        [NODE_PATCH, cluster_role("r", rule(("argoproj.io",), ("workflows",), ("create",)))],
        [DEPLOYER, rb("tools", "b", "r", DEVS)],
    )
    workloads = (*inputs.snapshot.workloads, controller)
    inputs = replace(inputs, snapshot=replace(inputs.snapshot, workloads=workloads))
    (draft,) = run_checks(inputs, only=["K8S-003"])
    assert draft.evidence["escalation"] == [
        "may run pods through workflows.argoproj.io in namespace tools as ServiceAccount "
        "tools/deployer"
    ]


@pytest.mark.parametrize(
    "tenant_rule",
    [
        # A template runs nothing until a Workflow is created from it.
        rule(("argoproj.io",), ("workflowtemplates",), ("create",)),
        # Reading custom resources runs nothing.
        rule(("ray.io",), ("rayclusters",), ("get", "list")),
        # A resource of the same name in another group is not the controller's.
        rule(("example.com",), ("workflows",), ("create",)),
    ],
)
def test_custom_resources_that_run_nothing_take_no_identity(tenant_rule):
    assert _k8s003(tenant_rule) == []


def test_a_training_job_in_the_gpu_operator_namespace_is_a_total_path():
    roles = [cluster_role("r", rule(("kubeflow.org",), ("pytorchjobs",), ("create",)))]
    drafts = run_checks(world(roles, [rb(OPS, "b", "r", DEVS)]), only=["K8S-003", "K8S-004"])
    assert {d.check_id for d in drafts} == {"K8S-003", "K8S-004"}
    for draft in drafts:
        assert draft.evidence["escalation"] == [
            "may run pods through pytorchjobs.kubeflow.org (its controller was not seen "
            f"running) in GPU Operator namespace {OPS} (privileged, as its accounts)"
        ]


# --- get pods/exec: exec over WebSocket before Kubernetes 1.35 -----------------------------------


def _node(version):
    from tests.posture.builders import gpu_node

    return gpu_node("gpu-1", kubelet_version=version)


GET_EXEC = rule(resources=("pods/exec",), verbs=("get",))


def test_get_pods_exec_is_exec_on_a_cluster_before_1_35():
    (draft,) = _k8s003(GET_EXEC, nodes=[_node("v1.30.4"), _node("v1.31.2-eks-1")])
    assert draft.evidence["escalation"] == [
        "may exec into pods with get on pods/exec (WebSocket, before Kubernetes 1.35) "
        "in namespace tools as ServiceAccount tools/deployer"
    ]


def test_get_pods_exec_is_nothing_once_a_node_runs_1_35():
    assert _k8s003(GET_EXEC, nodes=[_node("v1.34.1"), _node("v1.35.0")]) == []


@pytest.mark.parametrize(
    ("versions", "said"),
    [
        ([None], "the cluster's version is unknown"),
        # The API server may be up to three releases past its kubelets: 1.35 is possible.
        (["v1.33.5"], "the API server's version is not read, its nodes run kubelet 1.33"),
    ],
)
def test_get_pods_exec_with_the_api_servers_version_unknown_says_so(versions, said):
    (draft,) = _k8s003(GET_EXEC, nodes=[_node(v) for v in versions])
    (path,) = draft.evidence["escalation"]
    assert said in path


def test_get_on_pods_and_portforward_runs_nothing():
    tenant = rule(resources=("pods", "pods/portforward", "pods/log"), verbs=("get", "list"))
    assert _k8s003(tenant, rule(resources=("pods/portforward",), verbs=("create",))) == []


# --- chains of identity takeovers ----------------------------------------------------------------


def test_a_chain_of_takeovers_reaches_the_last_identitys_rights_and_names_each_step():
    roles = [
        cluster_role("token", rule(resources=("serviceaccounts/token",), verbs=("create",))),
        cluster_role("pods", rule(resources=("pods",), verbs=("create",))),
    ]
    bindings = [
        rb("tools", "bot-tokens", "token", user("ops-bot")),
        rb("kube-system", "x-pods", "pods", sa("tools", "x")),
        crb("node-controller", "node-labeler", sa("kube-system", "node-controller")),
    ]
    impersonate = rule(resources=("users",), verbs=("impersonate",), names=("ops-bot",))
    found = _k8s003(impersonate, bound_in=None, extra_roles=roles, extra_bindings=bindings)
    (draft,) = found
    chain = (
        "may impersonate User ops-bot, which may create a token for ServiceAccount tools/x, "
        "which may run pods in namespace kube-system as ServiceAccount kube-system/node-controller"
    )
    assert chain in draft.evidence["escalation"]
    assert draft.evidence["escalation"][0].startswith("may impersonate User ops-bot")


def test_a_chain_longer_than_the_bound_is_not_followed():
    from posture.rules.k8s.rbac_escalation import CHAIN_HOPS

    # user u0 may impersonate u1, u1 may impersonate u2, ...; only the last may patch nodes.
    last = CHAIN_HOPS + 1
    roles = [
        cluster_role(
            f"imp{i}", rule(resources=("users",), verbs=("impersonate",), names=(f"u{i}",))
        )
        for i in range(1, last + 1)
    ]
    bindings = [crb(f"u{i - 1}-imp", f"imp{i}", user(f"u{i - 1}")) for i in range(1, last + 1)]
    bindings.append(crb("last-nodes", "node-labeler", user(f"u{last}")))
    first = rule(resources=("users",), verbs=("impersonate",), names=("u0",))
    assert _k8s003(first, bound_in=None, extra_roles=roles, extra_bindings=bindings) == []
    # One step shorter is within the bound.
    bindings[-1] = crb("last-nodes", "node-labeler", user(f"u{last - 1}"))
    (draft,) = _k8s003(first, bound_in=None, extra_roles=roles, extra_bindings=bindings)
    assert draft.evidence["escalation"][0].count(", which may impersonate") == CHAIN_HOPS


# --- K8S-004 when neither the ClusterPolicy nor the sharing ConfigMaps were seen -----------------


def _unseen_world(roles, bindings):
    inputs = world(roles, bindings)
    return replace(
        inputs, snapshot=replace(inputs.snapshot, configmaps=(), gpu_operator_policies=())
    )


@pytest.mark.parametrize(
    ("tenant_rule", "bound_in"),
    [
        (rule(resources=("configmaps",), verbs=("create", "update")), OPS),
        (rule(resources=("configmaps",), verbs=("patch",)), None),
    ],
)
def test_k8s004_without_its_targets_says_what_was_not_seen(tenant_rule, bound_in):
    binding = rb(bound_in, "b", "r", DEVS) if bound_in else crb("b", "r", DEVS)
    inputs = _unseen_world([cluster_role("r", tenant_rule)], [binding])
    (draft,) = run_checks(inputs, only=["K8S-004"])
    assert draft.evidence["target_seen"] is False
    assert [o["object"] for o in draft.evidence["objects"]] == [
        f"every ConfigMap in namespace {OPS}"
    ]
    assert "was seen" in draft.title and f"every ConfigMap in namespace {OPS}" in draft.title


def test_k8s004_without_its_targets_is_quiet_for_other_namespaces_and_without_a_gpu_stack():
    roles = [cluster_role("r", rule(resources=("configmaps",), verbs=("update",)))]
    inputs = _unseen_world(roles, [rb("tools", "b", "r", DEVS)])
    assert run_checks(inputs, only=["K8S-004"]) == []
    everywhere = _unseen_world(roles, [crb("b", "r", DEVS)])
    no_stack = replace(
        everywhere,
        snapshot=replace(everywhere.snapshot, workloads=()),
    )
    assert run_checks(no_stack, only=["K8S-004"]) == []


def test_get_pods_attach_is_named_as_attach():
    attach = rule(resources=("pods/attach",), verbs=("get",))
    (draft,) = _k8s003(attach, nodes=[_node("v1.29.0")])
    assert draft.evidence["escalation"] == [
        "may attach to pods with get on pods/attach (WebSocket, before Kubernetes 1.35) "
        "in namespace tools as ServiceAccount tools/deployer"
    ]


def test_a_token_secret_for_any_account_takes_what_its_namespaces_group_holds():
    group_nodes = crb("tools-nodes", "node-labeler", group("system:serviceaccounts:tools"))
    roles = [NODE_PATCH, cluster_role("r", rule(resources=("secrets",), verbs=("create", "list")))]
    found = run_checks(world(roles, [group_nodes, rb("tools", "b", "r", DEVS)]), only=["K8S-003"])
    (draft,) = [d for d in found if d.subject_name == "b"]
    assert draft.evidence["escalation"] == [
        "may create a service-account token Secret (and read it) for Group "
        "system:serviceaccounts:tools"
    ]


def test_dra001_a_chain_to_an_account_that_may_label_namespaces():
    # The tenant runs Ray jobs in `ci` as ci/runner, which may mint a token for tools/labeler,
    # which may patch namespaces.
    roles = [
        cluster_role("ray", rule(("ray.io",), ("rayjobs",), ("create",))),
        cluster_role("tokens", rule(resources=("serviceaccounts/token",), verbs=("create",))),
        cluster_role("ns-labeler", rule(resources=("namespaces",), verbs=("patch",))),
    ]
    bindings = [
        rb("ci", "b", "ray", DEVS),
        rb("tools", "runner-tokens", "tokens", sa("ci", "runner")),
        crb("labeler-ns", "ns-labeler", sa("tools", "labeler")),
    ]
    (draft,) = run_checks(world(roles, bindings), only=["DRA-001"])
    assert draft.evidence["escalation"] == [
        "may run pods through rayjobs.ray.io (its controller was not seen running) in "
        "namespace ci as ServiceAccount ci/runner, "
        "which may create a token for ServiceAccount tools/labeler"
    ]
