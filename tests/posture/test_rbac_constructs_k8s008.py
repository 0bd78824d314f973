"""K8S-008 on real constructs: a Namespace object is written in its own namespace, verbs
compare exactly, and reviews and OpenShift's per-user defaults write in no tenant's namespace."""

from __future__ import annotations

import pytest

from tests.posture import test_rules_cross_tenant as xt

# --- K8S-008: the Namespace object is written in its own namespace --------------------------------

NS_PATCH = [{"apiGroups": [""], "resources": ["namespaces"], "verbs": ["patch"]}]


@pytest.mark.parametrize(
    ("objects", "reached"),
    [
        # Bound in beta: beta's own Namespace object (its tenant and pod-security labels).
        ([xt.binding("b", "ns-labeler", "Group:alpha-devs", ns="beta")], ["beta"]),
        # Cluster-wide: every other tenant's Namespace object.
        ([xt.binding("b", "ns-labeler", "Group:alpha-devs")], ["beta", "clinical"]),
        # Limited by name to the grantee's own namespace: no other tenant's.
        ([xt.binding("b", "ns-labeler-own", "Group:alpha-devs")], []),
    ],
)
def test_k8s008_patching_another_tenants_namespace_object_is_a_write_there(objects, reached):
    roles = [
        xt.cluster_role("ns-labeler", NS_PATCH),
        xt.cluster_role("ns-labeler-own", [{**NS_PATCH[0], "resourceNames": ["alpha"]}]),
    ]
    found = xt.k8s008(*roles, *objects)
    assert [e["namespace"] for d in found for e in d.evidence["namespaces"]] == reached


def test_k8s008_verbs_compare_exactly():
    # The authorizer compares verbs case-sensitively: "Create" allows nothing.
    odd = xt.cluster_role("odd", [{"apiGroups": [""], "resources": ["pods"], "verbs": ["Create"]}])
    assert xt.k8s008(odd, xt.rb("beta", "Group:alpha-devs", "odd")) == []


def test_k8s008_the_builtin_self_reviews_of_every_user_write_nothing():
    # system:basic-user (Kubernetes 1.28+), bound to system:authenticated on every cluster.
    basic_user = xt.cluster_role(
        "system:basic-user",
        [
            {
                "apiGroups": ["authorization.k8s.io"],
                "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                "verbs": ["create"],
            },
            {
                "apiGroups": ["authentication.k8s.io"],
                "resources": ["selfsubjectreviews"],
                "verbs": ["create"],
            },
        ],
    )
    binding = xt.binding("system:basic-user", "system:basic-user", "Group:system:authenticated")
    assert xt.k8s008(basic_user, binding) == []
    # localsubjectaccessreviews is namespaced, and still a question only.
    review = xt.cluster_role(
        "reviewer",
        [
            {
                "apiGroups": ["authorization.k8s.io"],
                "resources": ["localsubjectaccessreviews"],
                "verbs": ["create"],
            }
        ],
    )
    assert xt.k8s008(review, xt.rb("beta", "Group:alpha-devs", "reviewer")) == []


@pytest.mark.parametrize(
    "rule_",
    [
        # OpenShift defaults bound to system:authenticated on every cluster.
        {
            "apiGroups": ["oauth.openshift.io"],
            "resources": ["oauthaccesstokens"],
            "verbs": ["delete"],
        },
        {
            "apiGroups": ["authorization.openshift.io"],
            "resources": ["scopes"],
            "verbs": ["impersonate"],
        },
        {
            "apiGroups": ["build.openshift.io"],
            "resources": ["builds/docker", "builds/source"],
            "verbs": ["create"],
        },
        {
            "apiGroups": ["build.openshift.io"],
            "resources": ["buildconfigs/webhooks"],
            "verbs": ["create"],
        },
    ],
)
def test_k8s008_openshift_defaults_for_every_user_write_in_no_namespace(rule_):
    role = xt.cluster_role("default", [rule_])
    binding = xt.binding("default", "default", "Group:system:authenticated")
    assert xt.k8s008(role, binding) == []
    # ...while creating builds themselves in another tenant's namespace is a write there.
    builds = xt.cluster_role("b", [{**rule_, "resources": ["builds"], "verbs": ["create"]}])
    assert xt.k8s008(builds, xt.rb("beta", "Group:alpha-devs", "b"))
