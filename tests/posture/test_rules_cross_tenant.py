"""K8S-008: bindings that let one tenant's principals write in another tenant's namespace, over
RBAC objects written as `kubectl get -o json` prints them and read by the normaliser."""

from __future__ import annotations

import pytest

import posture.rules  # noqa: F401  (registers the checks)
from inventory.sources.normalise import normalise
from posture.inputs import PostureInputs, TenantInfo
from posture.rules.k8s.namespace_writes import write_verbs
from posture.rules.registry import run_checks
from tests.posture.builders import trust_class

RBAC = "rbac.authorization.k8s.io/v1"
ALPHA = TenantInfo("alpha", "Alpha", trust_class("internal"), ("alpha",), ("group:alpha-devs",))
BETA = TenantInfo("beta", "Beta", trust_class("external"), ("beta",), ("group:beta-users",))
CLIN = TenantInfo(
    "clin", "Clinical", trust_class("sensitive"), ("clinical",), ("group:clinical-ml",)
)
EDIT_RULES = [
    {
        "apiGroups": [""],
        "resources": ["pods", "pods/exec", "configmaps", "secrets"],
        "verbs": ["create", "delete", "deletecollection", "patch", "update"],
    },
    {
        "apiGroups": ["apps", "batch"],
        "resources": ["deployments", "jobs"],
        "verbs": ["create", "delete", "patch", "update"],
    },
    {"apiGroups": [""], "resources": ["pods", "pods/log"], "verbs": ["get", "list", "watch"]},
]
VIEW_RULES = [{"apiGroups": ["", "apps"], "resources": ["*"], "verbs": ["get", "list", "watch"]}]


def meta(name: str, namespace: str | None = None, **extra) -> dict:
    m = {
        "name": name,
        "uid": f"uid-{namespace}-{name}",
        "resourceVersion": "4711",
        "creationTimestamp": "2025-11-03T09:12:44Z",
        **extra,
    }
    if namespace:
        m["namespace"] = namespace
    return m


def namespace(name: str, **labels: str) -> dict:
    labels = {"kubernetes.io/metadata.name": name, **labels}
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": meta(name, labels=labels),
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    }


def platform_namespace(name: str) -> dict:
    """A namespace the platform team labelled its own (DESIGN §3)."""
    return namespace(name, **{"gpuposture.io/platform": "true"})


def cluster_role(name: str, rules: list[dict], labels=None, aggregate_label=None) -> dict:
    extra = {"labels": labels} if labels else {}
    role = {"apiVersion": RBAC, "kind": "ClusterRole", "metadata": meta(name, **extra)}
    role["rules"] = rules
    if aggregate_label:
        selector = {"matchLabels": {aggregate_label: "true"}}
        role["aggregationRule"] = {"clusterRoleSelectors": [selector]}
    return role


def role(ns: str, name: str, rules: list[dict]) -> dict:
    return {"apiVersion": RBAC, "kind": "Role", "metadata": meta(name, ns), "rules": rules}


def subject(spec: str) -> dict:
    kind, name = spec.split(":", 1)
    if kind == "ServiceAccount":
        ns, sa = name.split("/")
        return {"kind": kind, "name": sa, "namespace": ns}
    return {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name}


def binding(name: str, role_name: str, *subjects: str, ns: str | None = None, kind="ClusterRole"):
    return {
        "apiVersion": RBAC,
        "kind": "RoleBinding" if ns else "ClusterRoleBinding",
        "metadata": meta(name, ns),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role_name},
        "subjects": [subject(s) for s in subjects],
    }


BASE = [
    *(namespace(n) for n in ("alpha", "beta", "clinical", "gpu-operator", "kube-system")),
    cluster_role("edit", EDIT_RULES),
    cluster_role("view", VIEW_RULES),
]


def world(*objects: dict) -> PostureInputs:
    return PostureInputs("lab", normalise([*BASE, *objects]), (ALPHA, BETA, CLIN))


def k8s008(*objects: dict) -> list:
    return run_checks(world(*objects), only=["K8S-008"])


def rb(ns: str, subject_spec: str, role_name: str = "edit") -> dict:
    return binding(f"{role_name}-in-{ns}", role_name, subject_spec, ns=ns)


CASES = {
    "other-tenant-group": (rb("alpha", "Group:beta-users"), ("alpha", "beta"), ""),
    "other-tenant-sa": (rb("alpha", "ServiceAccount:beta/runner"), ("alpha", "beta"), ""),
    "sa-group": (rb("alpha", "Group:system:serviceaccounts:beta"), ("alpha", "beta"), ""),
    "sa-user": (rb("alpha", "User:system:serviceaccount:beta:runner"), ("alpha", "beta"), ""),
    # High even for a sensitive victim (DESIGN §5): its class weight raises its risk (§6).
    "stricter-class": (rb("clinical", "Group:alpha-devs"), ("alpha", "clin"), ""),
    # Every identity: each tenant, and the unclassified party (gpu-operator runs nothing here,
    # so nobody claims it and it is not the platform's).
    "authenticated": (
        rb("alpha", "Group:system:authenticated"),
        ("alpha", "beta", "clin", "unclassified"),
        "",
    ),
    "cluster-wide": (
        binding("b", "edit", "Group:beta-users"),
        ("alpha", "beta", "clin"),
        "",
    ),
    "read-only": (rb("alpha", "Group:beta-users", "view"), (), None),
    "own-tenant": (rb("alpha", "Group:alpha-devs"), (), None),
    "platform-namespace": (rb("gpu-operator", "Group:beta-users"), (), None),
    "unknown-group": (rb("alpha", "Group:contractors"), (), None),
    "missing-role": (rb("alpha", "Group:beta-users", "no-such-role"), (), None),
    "own-namespace-sa": (rb("alpha", "ServiceAccount:alpha/default"), (), None),
}


@pytest.mark.parametrize(("obj", "tenants", "severity"), CASES.values(), ids=CASES.keys())
def test_k8s008(obj, tenants, severity):
    found = k8s008(obj)
    if severity is None:
        assert found == []
    else:
        (draft,) = found
        assert draft.tenants == tenants
        assert draft.severity == severity
        assert (draft.subject_kind, draft.subject_name) == (obj["kind"], obj["metadata"]["name"])


def test_evidence_lists_each_namespace_its_owner_and_grantees():
    (draft,) = k8s008(binding("beta-everywhere", "edit", "Group:beta-users"))
    evidence = draft.evidence
    assert [e["namespace"] for e in evidence["namespaces"]] == ["alpha", "clinical"]
    clinical = evidence["namespaces"][1]
    assert (clinical["owner"], clinical["owner_class"]) == ("clin", "sensitive")
    assert clinical["grantees"] == [
        {
            "tenant": "beta",
            "trust_class": "external",
            "subjects": ["Group:beta-users"],
            "verbs": ["create", "delete", "deletecollection", "patch", "update"],
            "stricter_class": True,
            "sensitive_class": True,
        }
    ]
    assert evidence["namespaces"][0]["grantees"][0]["stricter_class"] is False
    assert evidence["stricter_class"] is True and evidence["namespace_count"] == 2
    assert evidence["binding"] == "ClusterRoleBinding beta-everywhere"
    assert "2 namespaces (1 of a sensitive class: clinical)" in draft.title
    assert "beta" in draft.title
    assert draft.exposure == 2


def test_aggregated_clusterrole_counts():
    label = "acme.io/aggregate-to-team-edit"
    aggregated = cluster_role("team-edit", [], aggregate_label=label)
    piece = cluster_role(
        "team-edit-jobs",
        [{"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["create"]}],
        labels={label: "true"},
    )
    (draft,) = k8s008(aggregated, piece, binding("b", "team-edit", "Group:beta-users", ns="alpha"))
    (grant,) = draft.evidence["grants"]
    assert grant["aggregated_from"] == "team-edit-jobs"
    assert draft.evidence["write_verbs"] == ["create"]


@pytest.mark.parametrize(
    ("rules", "verbs"),
    [
        ([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}], ["*"]),
        (
            [
                {
                    "apiGroups": ["rbac.authorization.k8s.io"],
                    "resources": ["roles", "rolebindings"],
                    "verbs": ["bind", "escalate"],
                }
            ],
            ["bind", "escalate"],
        ),
        (
            [{"apiGroups": [""], "resources": ["serviceaccounts"], "verbs": ["impersonate"]}],
            ["impersonate"],
        ),
        (
            [
                {
                    "apiGroups": [""],
                    "resources": ["configmaps"],
                    "verbs": ["update"],
                    "resourceNames": ["model-config"],
                }
            ],
            ["update"],
        ),
        ([{"apiGroups": [""], "resources": ["nodes"], "verbs": ["patch"]}], None),  # cluster-scoped
        ([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}], None),
    ],
)
def test_a_role_in_the_namespace_with_each_kind_of_write(rules, verbs):
    objects = (
        role("alpha", "r", rules),
        binding("b", "r", "Group:beta-users", ns="alpha", kind="Role"),
    )
    found = k8s008(*objects)
    if verbs is None:
        assert found == []
    else:
        (draft,) = found
        assert draft.evidence["write_verbs"] == verbs


def test_write_verbs_need_a_namespaced_resource():
    from inventory.snapshot import PolicyRule

    assert write_verbs(PolicyRule(("",), ("nodes", "namespaces"), ("*",))) == ()
    # ...except the Namespace object itself, asked about in its own namespace.
    assert write_verbs(PolicyRule(("",), ("namespaces",), ("patch",)), "beta") == ("patch",)
    assert write_verbs(PolicyRule(("",), ("nodes", "pods"), ("patch", "get"))) == ("patch",)
    assert write_verbs(PolicyRule(("",), (), ("create",))) == ()  # nonResourceURLs only


def test_a_cluster_scoped_custom_resource_grants_no_write_in_a_namespace():
    """Update on the Network Operator's NicClusterPolicy (mellanox.com, a cluster-scoped CRD)
    bound cluster-wide writes nothing in any tenant's namespace: no K8S-008. A custom resource
    whose scope the product does not know still counts, as a wildcard does."""
    from inventory.snapshot import PolicyRule

    rule = {"apiGroups": ["mellanox.com"], "resources": ["nicclusterpolicies"]}
    fabric = cluster_role("fabric-admin", [{**rule, "verbs": ["get", "update", "patch"]}])
    assert k8s008(fabric, binding("beta-fabric", "fabric-admin", "Group:beta-users")) == []
    unknown = cluster_role(
        "widget-admin",
        [{"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["update"]}],
    )
    (draft,) = k8s008(unknown, binding("beta-widgets", "widget-admin", "Group:beta-users"))
    assert draft.subject_name == "beta-widgets"
    wildcard = PolicyRule(("mellanox.com",), ("*",), ("patch",))
    assert write_verbs(wildcard, "alpha") == ("patch",)
    built_in = PolicyRule(("flowcontrol.apiserver.k8s.io",), ("flowschemas",), ("*",))
    assert write_verbs(built_in, "alpha") == ()


def test_a_cluster_scoped_name_in_another_api_group_still_counts():
    """A resource's name says nothing of its scope in another group: Cluster API's IPAM
    IPAddress (ipam.cluster.x-k8s.io) is namespaced, the core networking.k8s.io IPAddress is
    not; ACK's iam.services.k8s.aws users are namespaced, impersonation's core users are not."""
    from inventory.snapshot import PolicyRule

    capi = cluster_role(
        "capi-ipam-writer",
        [
            {
                "apiGroups": ["ipam.cluster.x-k8s.io"],
                "resources": ["ipaddresses"],
                "verbs": ["create", "delete"],
            }
        ],
    )
    (draft,) = k8s008(capi, binding("beta-ipam", "capi-ipam-writer", "Group:beta-users"))
    assert draft.subject_name == "beta-ipam"
    core = PolicyRule(("networking.k8s.io",), ("ipaddresses",), ("create",))
    assert write_verbs(core, "alpha") == ()
    ack_users = PolicyRule(("iam.services.k8s.aws",), ("users",), ("update",))
    assert write_verbs(ack_users, "alpha") == ("update",)
    openshift_users = PolicyRule(("user.openshift.io",), ("users", "groups"), ("update",))
    assert write_verbs(openshift_users, "alpha") == ()
    both = PolicyRule(("nvidia.com", "example.com"), ("clusterpolicies",), ("patch",))
    assert write_verbs(both, "alpha") == ("patch",)
    # Every group: ACK's namespaced users and Cluster API's IPAddress among them; the nodes
    # no group serves namespaced stay cluster-scoped.
    for twin in ("users", "ipaddresses"):
        assert write_verbs(PolicyRule(("*",), (twin,), ("create",)), "alpha") == ("create",)
    assert write_verbs(PolicyRule(("*",), ("nodes",), ("patch",)), "alpha") == ()
