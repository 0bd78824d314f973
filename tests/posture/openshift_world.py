"""An OpenShift cluster's pod admission as its API serves it: the default
SecurityContextConstraints (restated from OpenShift 4's defaults, the fields K8S-009 reads) and
the RBAC that grants their use (`system:openshift:scc:NAME` ClusterRoles; restricted-v2 bound
to every authenticated user)."""

from __future__ import annotations

from typing import Any

SCC_API = "security.openshift.io/v1"
RBAC_API = "rbac.authorization.k8s.io/v1"
# Volume types restricted-v2 and the other non-host SCCs allow (no hostPath).
SAFE_VOLUMES = [
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
]
HOST_VOLUMES = [*SAFE_VOLUMES, "hostPath"]


def scc(name: str, users=(), groups=(), **fields: Any) -> dict[str, Any]:
    """An SCC with every host feature off unless `fields` turn one on (SCCs have no spec)."""
    body: dict[str, Any] = {
        "apiVersion": SCC_API,
        "kind": "SecurityContextConstraints",
        "metadata": {"name": name},
        "allowHostDirVolumePlugin": False,
        "allowHostIPC": False,
        "allowHostNetwork": False,
        "allowHostPID": False,
        "allowHostPorts": False,
        "allowPrivilegedContainer": False,
        "readOnlyRootFilesystem": False,
        "allowedCapabilities": None,
        "defaultAddCapabilities": None,
        "requiredDropCapabilities": ["KILL", "MKNOD", "SETUID", "SETGID"],
        "priority": None,
        "users": list(users),
        "groups": list(groups),
        "volumes": SAFE_VOLUMES,
    }
    return body | fields


def default_sccs() -> list[dict[str, Any]]:
    host = {"allowHostDirVolumePlugin": True, "volumes": HOST_VOLUMES}
    return [
        scc(
            "restricted-v2",
            allowedCapabilities=["NET_BIND_SERVICE"],
            requiredDropCapabilities=["ALL"],
        ),
        scc("restricted"),
        scc("nonroot-v2", allowedCapabilities=["NET_BIND_SERVICE"]),
        scc("anyuid", groups=["system:cluster-admins"], priority=10),
        scc(
            "hostaccess",
            allowHostIPC=True,
            allowHostNetwork=True,
            allowHostPID=True,
            allowHostPorts=True,
            **host,
        ),
        scc(
            "hostmount-anyuid",
            users=["system:serviceaccount:openshift-infra:pv-recycler-controller"],
            **host,
        ),
        scc(
            "hostnetwork-v2",
            allowHostNetwork=True,
            allowHostPorts=True,
            allowedCapabilities=["NET_BIND_SERVICE"],
        ),
        scc(
            "privileged",
            users=["system:admin", "system:serviceaccount:openshift-infra:build-controller"],
            groups=["system:cluster-admins", "system:nodes", "system:masters"],
            allowHostDirVolumePlugin=True,
            allowHostIPC=True,
            allowHostNetwork=True,
            allowHostPID=True,
            allowHostPorts=True,
            allowPrivilegedContainer=True,
            allowedCapabilities=["*"],
            requiredDropCapabilities=None,
            volumes=["*"],
        ),
    ]


def scc_cluster_role(name: str) -> dict[str, Any]:
    """OpenShift's `system:openshift:scc:NAME`: `use` of one SCC."""
    return {
        "apiVersion": RBAC_API,
        "kind": "ClusterRole",
        "metadata": {"name": f"system:openshift:scc:{name}"},
        "rules": [
            {
                "apiGroups": ["security.openshift.io"],
                "resources": ["securitycontextconstraints"],
                "resourceNames": [name],
                "verbs": ["use"],
            }
        ],
    }


def binding(
    kind: str, name: str, role: str, subjects: list[dict[str, Any]], namespace: str = ""
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    return {
        "apiVersion": RBAC_API,
        "kind": kind,
        "metadata": metadata,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": subjects,
    }


def openshift_namespaces() -> list[dict[str, Any]]:
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}}
        for n in ("openshift-apiserver", "openshift-kube-apiserver", "openshift-monitoring")
    ]


def default_openshift() -> list[dict[str, Any]]:
    """A fresh OpenShift 4 cluster: its SCCs, their ClusterRoles, restricted-v2 for everyone."""
    names = [s["metadata"]["name"] for s in default_sccs()]
    everyone = [
        {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "system:authenticated"}
    ]
    return [
        *openshift_namespaces(),
        *default_sccs(),
        *(scc_cluster_role(n) for n in names),
        binding(
            "ClusterRoleBinding",
            "system:openshift:scc:restricted-v2",
            "system:openshift:scc:restricted-v2",
            everyone,
        ),
    ]
