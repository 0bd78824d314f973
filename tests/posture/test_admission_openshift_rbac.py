"""K8S-009 on OpenShift where the last full sync did not read some RBAC kinds: an SCC allowing
a control may be granted through a binding not read, so SCC admission denies it only as read.
What nothing else denies is "cannot tell" (low, naming the kinds and the SCCs), never a pass;
what a usable SCC opens stays open (high); PSA or a policy denying the controls still covers
them; a cluster without SCCs is judged as before."""

from __future__ import annotations

from dataclasses import replace

import pytest

import posture.rules  # noqa: F401
from inventory.sources.normalise import normalise
from posture.rules.registry import run_checks
from tests.posture.admission_world import namespace
from tests.posture.builders import inputs, pod, tenant
from tests.posture.openshift_world import binding, default_openshift

ALPHA = tenant("alpha", "external")
GPU = {"nvidia.com/gpu": 1}
TRAINER = {"kind": "ServiceAccount", "name": "trainer", "namespace": "alpha"}
NAMESPACED = frozenset({"Role", "RoleBinding"})
ALL_CONTROLS = ["privileged", "hostPID", "hostIPC", "hostNetwork", "hostPath", "capabilities"]


def k8s009(objects, unread=NAMESPACED, labels=None):
    read = normalise([namespace("alpha", **(labels or {})), *objects])
    base = inputs(pods=(pod("alpha", gpu=GPU),), tenants=(ALPHA,))
    snapshot = replace(
        base.snapshot,
        namespaces=read.namespaces,
        roles=read.roles,
        bindings=read.bindings,
        admission_policies=read.admission_policies,
    )
    world = replace(base, snapshot=snapshot, kinds_unread=frozenset(unread))
    return run_checks(world, only=["K8S-009"])


def with_users(scc_name: str, *users: str) -> list[dict]:
    objects = default_openshift()
    for obj in objects:
        if obj["kind"] == "SecurityContextConstraints" and obj["metadata"]["name"] == scc_name:
            obj["users"] = [*obj["users"], *users]
    return objects


@pytest.mark.parametrize(
    "unread",
    [NAMESPACED, {"RoleBinding"}, {"ClusterRole"}, {"ClusterRoleBinding"}],
    ids=["roles-and-bindings", "rolebindings", "clusterroles", "clusterrolebindings"],
)
def test_a_default_cluster_whose_rbac_was_not_read_cannot_tell(unread):
    (draft,) = k8s009(default_openshift(), unread)
    assert draft.severity == "low"
    assert draft.evidence["verdict"] == "unknown"
    assert draft.evidence["basis"].startswith("unverified")
    assert draft.evidence["enforced_controls"] == {}
    assert [k["kind"] for k in draft.evidence["rbac_kinds_not_read"]] == sorted(
        unread, key=["ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"].index
    )
    grantable = {s["scc"]: s["allows"] for s in draft.evidence["sccs_rbac_may_grant"]}
    # The SCCs allowing nothing (restricted-v2, anyuid...) could be granted to no effect.
    assert grantable == {
        "hostaccess": ["hostPID", "hostIPC", "hostNetwork", "hostPath"],
        "hostmount-anyuid": ["hostPath"],
        "hostnetwork-v2": ["hostNetwork"],
        "privileged": ALL_CONTROLS,
    }
    assert draft.title.startswith("Namespace alpha of tenant alpha: admission enforcement unknown")
    assert "may grant its pods SCC hostaccess, hostmount-anyuid, hostnetwork-v2, privileged" in (
        draft.title
    )


def test_psa_enforce_still_covers_what_rbac_not_read_may_grant():
    assert k8s009(default_openshift(), labels={"enforce": "restricted"}) == []


def test_what_a_usable_scc_opens_stays_open_and_high_the_rest_unknown():
    objects = with_users("hostnetwork-v2", "system:serviceaccount:alpha:default")
    (draft,) = k8s009(objects)
    assert draft.severity == ""  # the check's: high
    assert draft.evidence["verdict"] == "not enforced"
    assert "basis" not in draft.evidence
    assert "nothing at admission denying hostNetwork (SCC hostnetwork-v2 (usable by" in draft.title
    assert "the rest unknown (no SCC usable as read allows privileged, hostPID" in draft.title
    grantable = {s["scc"] for s in draft.evidence["sccs_rbac_may_grant"]}
    assert grantable == {"hostaccess", "hostmount-anyuid", "privileged"}


def test_a_grant_read_opens_as_before_whatever_else_was_not_read():
    grant = binding(
        "RoleBinding", "t", "system:openshift:scc:privileged", [TRAINER], namespace="alpha"
    )
    (draft,) = k8s009([*default_openshift(), grant], {"Role"})
    assert draft.severity == ""
    assert draft.evidence["verdict"] == "not enforced"
    assert "SCC privileged (usable by ServiceAccount:alpha/trainer) allow(s) every" in draft.title
    assert "rbac_kinds_not_read" not in draft.evidence  # nothing left to grant that is not open


def test_with_every_rbac_kind_read_a_default_cluster_passes():
    assert k8s009(default_openshift(), unread={"ConfigMap", "Service"}) == []


def test_a_cluster_that_is_not_openshift_is_unchanged_by_rbac_not_read():
    (draft,) = k8s009([], {"Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"})
    assert draft.severity == ""
    assert draft.evidence["verdict"] == "not enforced"
    assert "rbac_kinds_not_read" not in draft.evidence
    assert "security_context_constraints" not in draft.evidence


def test_no_scc_usable_as_read_denies_only_what_no_scc_allows():
    """Bindings not read at all: restricted-v2's own grant is not seen, so no SCC is usable
    as read. A control no SCC allows is still denied (no grant can open it); the one
    hostnetwork-v2 allows is unknown, not denied."""
    objects = [
        o
        for o in default_openshift()
        if o["kind"] != "SecurityContextConstraints"
        or o["metadata"]["name"] in ("restricted-v2", "hostnetwork-v2")
    ]
    objects = [o for o in objects if not o["kind"].endswith("Binding")]
    (draft,) = k8s009(objects, {"ClusterRoleBinding", "RoleBinding"})
    assert draft.severity == "low"
    assert draft.evidence["verdict"] == "unknown"
    assert draft.evidence["missing_controls"] == ["hostNetwork (POD-002)"]
    assert set(draft.evidence["enforced_controls"]) == set(ALL_CONTROLS) - {"hostNetwork"}
    assert draft.evidence["sccs_rbac_may_grant"] == [
        {"scc": "hostnetwork-v2", "allows": ["hostNetwork"]}
    ]
