"""The user-facing ClusterRoles the API server creates on every cluster, as data. PURE.

Kubernetes' RBAC bootstrap policy creates `cluster-admin`, `admin`, `edit` and `view`, and the
API server creates them again at each start if they are missing, so a binding to `edit` grants
edit's rights whether or not an export listed the ClusterRole. A snapshot without one of them
(an export that left ClusterRoles out, or a hand-written world) would otherwise read such a
binding as granting nothing: the evaluation stands these in for the ones the snapshot did not
hold (`missing_defaults`). A ClusterRole of that name in the snapshot always wins: the cluster
may have changed it or how it aggregates.

The rules are what the upstream bootstrap policy gives these roles once aggregated (admin holds
edit's, edit holds view's), resource rules only: non-resource URLs reach nothing our checks ask
about. Each also aggregates as upstream does: the ClusterRoles of the snapshot labelled
`rbac.authorization.k8s.io/aggregate-to-<role>` (a CRD's roles, e.g. Kubeflow's or Ray's) add
their rules. admin's and edit's selectors name the roles below them too, since the roles they
aggregate through (edit, view) may be missing as well. The stand-ins are never aggregated into
a ClusterRole of the snapshot: that one's rules are as the snapshot shows them.
"""

from __future__ import annotations

from collections.abc import Iterable

from inventory.snapshot import PolicyRule, Role

READ = ("get", "list", "watch")
WRITE = ("create", "delete", "deletecollection", "patch", "update")
AGGREGATE = "rbac.authorization.k8s.io/aggregate-to-"

# (API group, resources, verbs) grouped as a reader would: what each role adds to the one below.
_VIEW = (
    (
        "",
        ("configmaps", "endpoints", "persistentvolumeclaims", "persistentvolumeclaims/status"),
        READ,
    ),
    ("", ("pods", "replicationcontrollers", "replicationcontrollers/scale"), READ),
    ("", ("serviceaccounts", "services", "services/status"), READ),
    (
        "",
        ("bindings", "events", "limitranges", "namespaces/status", "pods/log", "pods/status"),
        READ,
    ),
    ("", ("replicationcontrollers/status", "resourcequotas", "resourcequotas/status"), READ),
    ("", ("namespaces",), READ),
    ("discovery.k8s.io", ("endpointslices",), READ),
    (
        "apps",
        (
            "controllerrevisions",
            "daemonsets",
            "daemonsets/status",
            "deployments",
            "deployments/scale",
            "deployments/status",
            "replicasets",
            "replicasets/scale",
            "replicasets/status",
            "statefulsets",
            "statefulsets/scale",
            "statefulsets/status",
        ),
        READ,
    ),
    ("autoscaling", ("horizontalpodautoscalers", "horizontalpodautoscalers/status"), READ),
    ("batch", ("cronjobs", "cronjobs/status", "jobs", "jobs/status"), READ),
    (
        "extensions",
        (
            "daemonsets",
            "daemonsets/status",
            "deployments",
            "deployments/scale",
            "deployments/status",
            "ingresses",
            "ingresses/status",
            "networkpolicies",
            "replicasets",
            "replicasets/scale",
            "replicasets/status",
            "replicationcontrollers/scale",
        ),
        READ,
    ),
    ("policy", ("poddisruptionbudgets", "poddisruptionbudgets/status"), READ),
    ("networking.k8s.io", ("ingresses", "ingresses/status", "networkpolicies"), READ),
)
_POD_ACCESS = ("pods/attach", "pods/exec", "pods/portforward", "pods/proxy")
_EDIT = (
    # Reading Secrets, and exec/attach by GET (the WebSocket form of them).
    ("", (*_POD_ACCESS, "secrets", "services/proxy"), READ),
    ("", ("serviceaccounts",), ("impersonate",)),
    ("", ("pods", *_POD_ACCESS), WRITE),
    ("", ("pods/eviction",), ("create",)),
    (
        "",
        (
            "configmaps",
            "events",
            "persistentvolumeclaims",
            "replicationcontrollers",
            "replicationcontrollers/scale",
            "secrets",
            "serviceaccounts",
            "services",
            "services/proxy",
        ),
        WRITE,
    ),
    ("", ("serviceaccounts/token",), ("create",)),
    (
        "apps",
        (
            "daemonsets",
            "deployments",
            "deployments/rollback",
            "deployments/scale",
            "replicasets",
            "replicasets/scale",
            "statefulsets",
            "statefulsets/scale",
        ),
        WRITE,
    ),
    ("autoscaling", ("horizontalpodautoscalers",), WRITE),
    ("batch", ("cronjobs", "jobs"), WRITE),
    (
        "extensions",
        (
            "daemonsets",
            "deployments",
            "deployments/rollback",
            "deployments/scale",
            "ingresses",
            "networkpolicies",
            "replicasets",
            "replicasets/scale",
            "replicationcontrollers/scale",
        ),
        WRITE,
    ),
    ("policy", ("poddisruptionbudgets",), WRITE),
    ("networking.k8s.io", ("ingresses", "networkpolicies"), WRITE),
    ("coordination.k8s.io", ("leases",), (*WRITE, *READ)),
)
# The namespace's own RBAC, without bind or escalate: RBAC still stops a RoleBinding or Role
# granting more than its author holds.
_ADMIN = (
    ("authorization.k8s.io", ("localsubjectaccessreviews",), ("create",)),
    ("rbac.authorization.k8s.io", ("rolebindings", "roles"), (*WRITE, *READ)),
)


def _rules(*groups: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...]) -> tuple:
    return tuple(PolicyRule((g,), res, verbs) for rules in groups for g, res, verbs in rules)


def _aggregating(name: str, rules: tuple[PolicyRule, ...], *below: str) -> Role:
    selectors = tuple({"matchLabels": {AGGREGATE + n: "true"}} for n in (name, *below))
    return Role(
        "ClusterRole",
        name,
        rules=rules,
        labels={"kubernetes.io/bootstrapping": "rbac-defaults"},
        aggregation_selectors=selectors,
    )


DEFAULT_CLUSTER_ROLES: dict[str, Role] = {
    "cluster-admin": Role(
        "ClusterRole",
        "cluster-admin",
        rules=(PolicyRule(("*",), ("*",), ("*",)),),
        labels={"kubernetes.io/bootstrapping": "rbac-defaults"},
    ),
    "admin": _aggregating("admin", _rules(_ADMIN, _EDIT, _VIEW), "edit", "view"),
    "edit": _aggregating("edit", _rules(_EDIT, _VIEW), "view"),
    "view": _aggregating("view", _rules(_VIEW)),
}


def missing_defaults(roles: Iterable[Role]) -> tuple[Role, ...]:
    """The default ClusterRoles no ClusterRole of `roles` is named as, to stand in for them."""
    held = {r.name for r in roles if r.kind == "ClusterRole"}
    return tuple(role for name, role in DEFAULT_CLUSTER_ROLES.items() if name not in held)
