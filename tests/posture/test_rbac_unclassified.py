"""The service accounts of unclassified namespaces are the unclassified party's principals
(DESIGN §3 fail closed): K8S-003, K8S-004, K8S-008 and DRA-001 judge them as a tenant of the
unclassified class, on the binding, saying which namespace nobody claims. Platform namespaces
(the defaults, the GPU Operator's, those found or labelled, a platform-class tenant's) stay the
platform's."""

from __future__ import annotations

from dataclasses import replace

import pytest

import posture.rules  # noqa: F401  (registers the checks)
from inventory.snapshot import Namespace
from posture.inputs import PostureInputs, TenantInfo
from posture.rules.registry import run_checks
from tests.posture.builders import trust_class
from tests.posture.test_rules_rbac import (
    ALPHA,
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

ADMIN = cluster_role("cluster-admin", rule(("*",), ("*",), ("*",)))
EDIT = cluster_role("edit", rule(resources=("pods", "configmaps"), verbs=("create", "patch")))
JUDGED = ("K8S-003", "K8S-004", "K8S-008", "DRA-001")
# Namespaces beside alpha's: velero nobody claims; the rest are the platform's, each by one
# of DESIGN §3's ways (world(): OPS and tools as the sync found them).
NAMESPACES = ("alpha", "velero", "kube-system", OPS, "tools", "addons", "ops")
OPS_TEAM = TenantInfo("ops-team", "Ops", trust_class("platform"), ("ops",), ())


def cluster(*bindings, roles=(ADMIN, EDIT)) -> PostureInputs:
    base = world(roles, bindings)
    labelled = {"addons": {"gpuposture.io/platform": "true"}}
    namespaces = tuple(Namespace(n, labelled.get(n, {})) for n in NAMESPACES)
    return replace(
        base,
        snapshot=replace(base.snapshot, namespaces=namespaces),
        tenants=(ALPHA, OPS_TEAM),
    )


def found(world_: PostureInputs, check_id: str) -> list:
    return run_checks(world_, only=[check_id])


@pytest.mark.parametrize("check_id", ["K8S-003", "K8S-004", "DRA-001"])
@pytest.mark.parametrize(
    "subject",
    [
        sa("velero", "velero-server"),
        group("system:serviceaccounts:velero"),
        user("system:serviceaccount:velero:velero-server"),
    ],
    ids=["sa", "sa-group", "sa-user"],
)
def test_an_unclaimed_namespaces_account_is_judged_as_unclassified(check_id, subject):
    (draft,) = found(cluster(crb("velero-server", "cluster-admin", subject)), check_id)
    assert draft.tenants == ("unclassified",)
    # The subject stays the binding (DESIGN §5); the evidence names the unclaimed namespace,
    # by the key the "claim this namespace" action groups on.
    assert (draft.subject_kind, draft.subject_name) == ("ClusterRoleBinding", "velero-server")
    assert draft.evidence["principal_namespace"] == "velero"
    assert draft.evidence["unclassified_namespaces"] == ["velero"]
    why = draft.evidence["why_unclassified"]
    assert "velero: claimed by no tenant and not a platform namespace" in why
    assert "class external" in why and 'gpuposture.io/platform="true"' in why
    assert "unclassified (unclaimed namespace velero)" in draft.title


@pytest.mark.parametrize(
    "namespace",
    ["kube-system", OPS, "tools", "addons", "ops"],
    ids=["default", "gpu-operator", "found-by-sync", "labelled", "platform-class-tenant"],
)
@pytest.mark.parametrize("check_id", JUDGED)
def test_platform_namespaces_accounts_stay_the_platforms(check_id, namespace):
    world_ = cluster(crb("admin", "cluster-admin", sa(namespace, "controller")))
    assert found(world_, check_id) == []


@pytest.mark.parametrize("check_id", JUDGED)
def test_users_and_groups_no_tenant_lists_belong_to_no_party(check_id):
    bindings = [crb("a", "cluster-admin", user("bob")), crb("b", "cluster-admin", group("ext"))]
    assert found(cluster(*bindings), check_id) == []


def test_an_unclaimed_namespaces_account_writing_in_a_tenants_namespace_is_k8s008():
    binding = rb("alpha", "argocd-controller", "edit", sa("velero", "argocd"))
    (draft,) = found(cluster(binding), "K8S-008")
    assert draft.tenants == ("alpha", "unclassified")
    assert draft.subject_name == "argocd-controller"
    (entry,) = draft.evidence["namespaces"]
    assert entry["namespace"] == "alpha"
    assert [g["tenant"] for g in entry["grantees"]] == ["unclassified"]
    assert draft.evidence["principal_namespace"] == "velero"
    # external (the unclassified class) is below internal: the check's own severity.
    assert draft.severity == ""
    assert "lets tenant unclassified (unclaimed namespace velero) create/patch in alpha" in (
        draft.title
    )


def test_a_binding_to_every_identity_reaches_the_unclassified_party_too():
    # As it reaches each tenant: unclassified namespaces' accounts are authenticated too, but
    # no one namespace is to claim.
    (draft,) = found(
        cluster(crb("everyone", "cluster-admin", group("system:authenticated"))), "K8S-003"
    )
    assert draft.tenants == ("alpha", "unclassified")
    assert draft.evidence["unclassified_namespaces"] == []
    assert "principal_namespace" not in draft.evidence


def test_accounts_of_two_unclaimed_namespaces_name_both_and_no_single_one():
    bindings = [crb("b", "cluster-admin", sa("velero"), sa("argocd"))]
    world_ = cluster(*bindings)
    world_ = replace(
        world_,
        snapshot=replace(
            world_.snapshot, namespaces=(*world_.snapshot.namespaces, Namespace("argocd"))
        ),
    )
    (draft,) = found(world_, "K8S-003")
    assert draft.evidence["unclassified_namespaces"] == ["argocd", "velero"]
    assert "principal_namespace" not in draft.evidence  # claiming one would not close it
    assert "(unclaimed namespaces argocd, velero)" in draft.title


def test_no_unclassified_namespace_no_party():
    world_ = cluster(crb("b", "cluster-admin", sa("velero")))
    claimed = replace(ALPHA, namespaces=("alpha", "velero"))
    (draft,) = found(replace(world_, tenants=(claimed, OPS_TEAM)), "K8S-003")
    assert draft.tenants == ("alpha",)  # claimed: the tenant's own account
    assert "principal_namespace" not in draft.evidence
