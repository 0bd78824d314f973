"""K8S-009 on OpenShift: SecurityContextConstraints are its pod admission. A fresh cluster
(restricted-v2 for every authenticated user) denies every control; a tenant account granted
the privileged SCC (RBAC `use` or the SCC's users list) opens them, and the finding names the
SCC and the account; an OpenShift snapshot without SCCs is unknown, not "no admission"."""

from __future__ import annotations

from dataclasses import replace

import pytest

import posture.rules  # noqa: F401
from inventory.sources.normalise import normalise
from posture.rules.k8s.scc import scc_allows
from posture.rules.registry import run_checks
from tests.posture.admission_world import ALL_CONTROLS_CEL, namespace, vap
from tests.posture.admission_world import binding as binding_vap
from tests.posture.builders import inputs, pod, tenant
from tests.posture.openshift_world import binding, default_openshift, default_sccs

ALPHA = tenant("alpha", "external")
GPU = {"nvidia.com/gpu": 1}
TRAINER = {"kind": "ServiceAccount", "name": "trainer", "namespace": "alpha"}


def k8s009(objects):
    own = any(o["kind"] == "Namespace" and o["metadata"]["name"] == "alpha" for o in objects)
    read = normalise([*([] if own else [namespace("alpha")]), *objects])
    base = inputs(pods=(pod("alpha", gpu=GPU),), tenants=(ALPHA,))
    snapshot = replace(
        base.snapshot,
        namespaces=read.namespaces,
        roles=read.roles,
        bindings=read.bindings,
        admission_policies=read.admission_policies,
    )
    return run_checks(replace(base, snapshot=snapshot), only=["K8S-009"])


def test_a_default_openshift_cluster_admits_only_restricted_pods():
    assert k8s009(default_openshift()) == []


def test_a_tenant_account_granted_the_privileged_scc_opens_every_control():
    grant = binding(
        "RoleBinding",
        "trainer-privileged",
        "system:openshift:scc:privileged",
        [TRAINER],
        namespace="alpha",
    )
    (draft,) = k8s009([*default_openshift(), grant])
    assert "SCC privileged (usable by ServiceAccount:alpha/trainer) allow(s) every" in draft.title
    assert draft.evidence["verdict"] == "not enforced"
    assert draft.evidence["enforced_controls"] == {}
    privileged = [
        s for s in draft.evidence["security_context_constraints"] if s["scc"] == "privileged"
    ]
    assert privileged[0]["allows"] == [
        "privileged",
        "hostPID",
        "hostIPC",
        "hostNetwork",
        "hostPath",
        "capabilities",
    ]
    assert privileged[0]["usable_by"] == [
        {
            "subject": "ServiceAccount:alpha/trainer",
            "via": "RoleBinding alpha/trainer-privileged -> system:openshift:scc:privileged",
        }
    ]


def test_a_rolebinding_in_another_namespace_opens_nothing_here():
    grant = binding(
        "RoleBinding", "x", "system:openshift:scc:privileged", [TRAINER], namespace="beta"
    )
    assert k8s009([*default_openshift(), grant]) == []


def test_the_sccs_users_list_naming_a_tenant_account_opens_what_it_allows():
    objects = default_openshift()
    for obj in objects:
        if obj.get("metadata", {}).get("name") == "hostnetwork-v2" and "users" in obj:
            obj["users"] = ["system:serviceaccount:alpha:default"]
    (draft,) = k8s009(objects)
    assert draft.evidence["verdict"] == "partial"
    assert draft.evidence["missing_controls"] == ["hostNetwork (POD-002)"]
    assert "SCC hostnetwork-v2 (usable by User:system:serviceaccount:alpha:default)" in draft.title


def test_privileged_through_the_users_list_names_it_too():
    objects = default_openshift()
    for obj in objects:
        if obj.get("metadata", {}).get("name") == "privileged" and "users" in obj:
            obj["users"].append("system:serviceaccount:alpha:trainer")
    (draft,) = k8s009(objects)
    assert "SCC privileged (usable by User:system:serviceaccount:alpha:trainer)" in draft.title
    assert draft.evidence["missing_controls"][0] == "privileged (POD-001)"


def test_psa_enforce_still_covers_what_an_scc_opens():
    grant = binding(
        "RoleBinding", "x", "system:openshift:scc:privileged", [TRAINER], namespace="alpha"
    )
    enforced = namespace("alpha", enforce="restricted")
    assert k8s009([enforced, *default_openshift(), grant]) == []


def test_an_openshift_snapshot_without_sccs_is_unknown():
    objects = [o for o in default_openshift() if o["kind"] != "SecurityContextConstraints"]
    (draft,) = k8s009(objects)
    assert draft.evidence["verdict"] == "unknown"
    assert "security.openshift.io/securitycontextconstraints could not be read" in draft.title
    assert draft.evidence["policy_reads"][-1]["status"] == "not in the snapshot"


def test_a_cluster_that_is_not_openshift_is_unchanged():
    (draft,) = k8s009([])
    assert draft.evidence["verdict"] == "not enforced"
    assert "no PSA enforce, no denying policy" in draft.title
    assert "security_context_constraints" not in draft.evidence


def test_what_each_default_scc_allows():
    allowed = {s["metadata"]["name"]: scc_allows(s) for s in default_sccs()}
    assert allowed["restricted-v2"] == ()
    assert allowed["anyuid"] == ()
    assert allowed["hostmount-anyuid"] == ("hostPath",)
    assert allowed["hostnetwork-v2"] == ("hostNetwork",)
    assert allowed["hostaccess"] == ("hostPID", "hostIPC", "hostNetwork", "hostPath")
    assert len(allowed["privileged"]) == 6
    assert scc_allows({"allowedCapabilities": ["CAP_SYS_ADMIN"]}) == ("capabilities",)
    assert scc_allows({"defaultAddCapabilities": ["NET_ADMIN"]}) == ("capabilities",)


@pytest.mark.parametrize(
    "sign",
    [
        pytest.param(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": "gpu-1", "labels": {"node.openshift.io/os_id": "rhcos"}},
            },
            id="node-label",
        ),
        pytest.param(
            {
                "apiVersion": "route.openshift.io/v1",
                "kind": "Route",
                "metadata": {"name": "notebook", "namespace": "alpha"},
                "spec": {"host": "nb.apps.example.com", "to": {"kind": "Service", "name": "nb"}},
            },
            id="route",
        ),
    ],
)
def test_other_signs_of_openshift_without_sccs_are_unknown_too(sign):
    read = normalise([namespace("alpha"), sign])
    base = inputs(pods=(pod("alpha", gpu=GPU),), tenants=(ALPHA,))
    snapshot = replace(
        base.snapshot, nodes=read.nodes, ingresses=read.ingresses, namespaces=read.namespaces
    )
    (draft,) = run_checks(replace(base, snapshot=snapshot), only=["K8S-009"])
    assert draft.evidence["verdict"] == "unknown"


def test_the_title_names_only_the_sccs_opening_what_nothing_else_denies():
    """hostmount-anyuid opens hostPath, but a Deny VAP refuses hostPath: only hostnetwork-v2
    is named for the hostNetwork nothing denies."""
    objects = default_openshift()
    for obj in objects:
        if obj.get("users") is not None and obj["metadata"]["name"] in (
            "hostmount-anyuid",
            "hostnetwork-v2",
        ):
            obj["users"] = ["system:serviceaccount:alpha:default"]
    no_host_path = vap(expression=ALL_CONTROLS_CEL[2])
    (draft,) = k8s009([*objects, no_host_path, binding_vap()])
    assert draft.evidence["missing_controls"] == ["hostNetwork (POD-002)"]
    assert "SCC hostnetwork-v2 (usable by" in draft.title
    assert "hostmount-anyuid" not in draft.title
    usable = {s["scc"] for s in draft.evidence["security_context_constraints"]}
    assert usable == {"hostmount-anyuid", "hostnetwork-v2", "restricted-v2"}
