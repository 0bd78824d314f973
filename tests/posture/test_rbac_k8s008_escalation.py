"""K8S-008 through escalation paths: a tenant that may take an identity writing in another
tenant's namespace (impersonation, a token, running pods where it lives, chains) writes there."""

from __future__ import annotations

from inventory.snapshot import PolicyRule
from posture.rules.k8s.namespace_writes import write_verbs
from posture.rules.registry import run_checks
from tests.posture.test_rules_cross_tenant import (
    binding,
    cluster_role,
    platform_namespace,
    rb,
    world,
)

IMPERSONATE_RUNNER = cluster_role(
    "impersonate-runner",
    [
        {
            "apiGroups": [""],
            "resources": ["serviceaccounts"],
            "verbs": ["impersonate"],
            "resourceNames": ["runner"],
        }
    ],
)
IMPERSONATE_GROUPS = cluster_role(
    "impersonate-groups", [{"apiGroups": [""], "resources": ["groups"], "verbs": ["impersonate"]}]
)
CREATE_PODS = cluster_role(
    "pod-maker", [{"apiGroups": [""], "resources": ["pods"], "verbs": ["create"]}]
)
TOKENS = cluster_role(
    "token-maker",
    [{"apiGroups": [""], "resources": ["serviceaccounts/token"], "verbs": ["create"]}],
)
CM_READER = cluster_role(
    "cm-reader", [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]
)
TOOLS = platform_namespace("tools")  # the platform's, no tenant's


def k8s008(*objects):
    return run_checks(world(TOOLS, *objects), only=["K8S-008"])


def test_impersonating_another_tenants_principal_writes_where_it_writes():
    # beta may impersonate alpha's group, which edits alpha's namespace.
    impersonate = cluster_role(
        "impersonate-alpha",
        [
            {
                "apiGroups": [""],
                "resources": ["groups"],
                "verbs": ["impersonate"],
                "resourceNames": ["alpha-devs"],
            }
        ],
    )
    (draft,) = k8s008(
        impersonate,
        binding("beta-as-alpha", "impersonate-alpha", "Group:beta-users"),
        rb("alpha", "Group:alpha-devs"),
    )
    assert (draft.subject_kind, draft.subject_name) == ("ClusterRoleBinding", "beta-as-alpha")
    # The victim (alpha, owner of the namespace) and the attacker (beta, whose principals
    # hold the binding that opens the path).
    assert draft.tenants == ("alpha", "beta")
    assert draft.severity == ""  # the check's own (high): alpha's class is not stricter
    assert draft.evidence["escalation"] == ["may impersonate Group alpha-devs"]
    (entry,) = draft.evidence["namespaces"]
    assert entry["namespace"] == "alpha" and entry["owner"] == "alpha"
    (grantee,) = entry["grantees"]
    assert grantee["tenant"] == "beta"
    assert grantee["verbs"] == ["create", "delete", "deletecollection", "patch", "update"]
    assert grantee["escalation"] == ["may impersonate Group alpha-devs"]
    assert draft.title.endswith("by escalation (may impersonate Group alpha-devs)")
    assert "in alpha" in draft.title


def test_running_pods_where_an_account_writes_in_a_stricter_tenant():
    # alpha may create pods in the platform's tools namespace, whose deployer edits clinical.
    (draft,) = k8s008(
        CREATE_PODS,
        rb("tools", "Group:alpha-devs", "pod-maker"),
        rb("clinical", "ServiceAccount:tools/deployer"),
    )
    assert (draft.subject_namespace, draft.subject_name) == ("tools", "pod-maker-in-tools")
    assert draft.tenants == ("alpha", "clin")
    assert draft.severity == "" and draft.evidence["sensitive_class"] is True  # high
    assert draft.evidence["escalation"] == [
        "may run pods in namespace tools as ServiceAccount tools/deployer"
    ]
    assert [e["namespace"] for e in draft.evidence["namespaces"]] == ["clinical"]


def test_a_chain_of_identities_is_followed_and_named():
    # beta mints a token for tools/deployer, which may impersonate ops/runner, which edits
    # alpha's namespace.
    (draft,) = k8s008(
        platform_namespace("ops"),
        TOKENS,
        IMPERSONATE_RUNNER,
        rb("tools", "Group:beta-users", "token-maker"),
        rb("ops", "ServiceAccount:tools/deployer", "impersonate-runner"),
        rb("alpha", "ServiceAccount:ops/runner"),
    )
    assert draft.subject_name == "token-maker-in-tools"
    assert draft.tenants == ("alpha", "beta")
    assert draft.evidence["escalation"] == [
        "may create a token for ServiceAccount tools/deployer, which may impersonate "
        "ServiceAccount ops/runner"
    ]


def test_impersonating_system_masters_writes_in_every_tenant_namespace():
    (draft,) = k8s008(
        IMPERSONATE_GROUPS, binding("beta-impersonates", "impersonate-groups", "Group:beta-users")
    )
    assert draft.tenants == ("alpha", "beta", "clin")
    assert [e["namespace"] for e in draft.evidence["namespaces"]] == ["alpha", "clinical"]
    assert draft.evidence["write_verbs"] == ["*"]
    assert draft.evidence["escalation"] == ["may impersonate group system:masters"]
    assert draft.severity == "" and draft.evidence["sensitive_class"] is True  # high
    assert "lets tenant beta do anything in 2 namespaces" in draft.title


def test_a_direct_write_is_named_without_the_path():
    # beta edits alpha directly and may also run pods there as alpha's accounts: the grant is
    # the cause, no escalation is listed.
    (draft,) = k8s008(rb("alpha", "Group:beta-users"), rb("alpha", "ServiceAccount:alpha/app"))
    assert draft.subject_name == "edit-in-alpha"
    assert "escalation" not in draft.evidence
    assert "escalation" not in draft.title


def test_quiet_when_the_identity_taken_writes_only_in_the_tenants_own_namespace():
    # alpha runs pods in tools as the deployer, which edits only alpha's namespace.
    assert (
        k8s008(
            CREATE_PODS,
            rb("tools", "Group:alpha-devs", "pod-maker"),
            rb("alpha", "ServiceAccount:tools/deployer"),
        )
        == []
    )


def test_quiet_when_no_tenant_may_take_the_platforms_identity():
    # The platform's deployer edits every tenant's namespace; alpha only reads in tools.
    assert (
        k8s008(
            CM_READER,
            rb("tools", "Group:alpha-devs", "cm-reader"),
            binding("deployer-everywhere", "edit", "ServiceAccount:tools/deployer"),
            rb("tools", "Group:platform-admins", "pod-maker"),
            CREATE_PODS,
        )
        == []
    )


def test_impersonation_alone_is_no_write_in_a_namespace():
    # Impersonating a user with no bindings takes no rights: nothing to report.
    rule = {"apiGroups": [""], "resources": ["users"], "verbs": ["impersonate"]}
    grant = binding("alpha-imp", "imp-users", "Group:alpha-devs")
    assert k8s008(cluster_role("imp-users", [rule]), grant) == []
    assert write_verbs(PolicyRule(("",), ("users", "groups"), ("impersonate",)), "beta") == ()
