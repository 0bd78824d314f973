"""The reader ClusterRole grants exactly what the live source lists, read-only, no Secrets."""

from __future__ import annotations

from pathlib import Path

import yaml

from inventory.sources.kube_admission import ADMISSION_CUSTOM_KINDS, GATEKEEPER_GROUP_VERSION
from inventory.sources.kube_kinds import DRA_LIST_METHODS, KINDS, OPTIONAL_CUSTOM_KINDS
from inventory.sources.kube_owners import OWNER_GROUPS

RBAC = Path(__file__).resolve().parent.parent / "deploy" / "rbac.yaml"
PLURALS = {
    "Node": ("", "nodes"),
    "Namespace": ("", "namespaces"),
    "Pod": ("", "pods"),
    "ResourceQuota": ("", "resourcequotas"),
    "ConfigMap": ("", "configmaps"),
    "Service": ("", "services"),
    "PersistentVolume": ("", "persistentvolumes"),
    "ServiceAccount": ("", "serviceaccounts"),
    "RuntimeClass": ("node.k8s.io", "runtimeclasses"),
    "DaemonSet": ("apps", "daemonsets"),
    "Deployment": ("apps", "deployments"),
    "ReplicaSet": ("apps", "replicasets"),
    "StatefulSet": ("apps", "statefulsets"),
    "Job": ("batch", "jobs"),
    "CronJob": ("batch", "cronjobs"),
    "Role": ("rbac.authorization.k8s.io", "roles"),
    "ClusterRole": ("rbac.authorization.k8s.io", "clusterroles"),
    "RoleBinding": ("rbac.authorization.k8s.io", "rolebindings"),
    "ClusterRoleBinding": ("rbac.authorization.k8s.io", "clusterrolebindings"),
    "Ingress": ("networking.k8s.io", "ingresses"),
    "NetworkPolicy": ("networking.k8s.io", "networkpolicies"),
    "DeviceClass": ("resource.k8s.io", "deviceclasses"),
    "ResourceClaim": ("resource.k8s.io", "resourceclaims"),
    "ResourceClaimTemplate": ("resource.k8s.io", "resourceclaimtemplates"),
    "ResourceSlice": ("resource.k8s.io", "resourceslices"),
}


def granted() -> set[tuple[str, str, str]]:
    role = next(d for d in yaml.safe_load_all(RBAC.read_text()) if d["kind"] == "ClusterRole")
    return {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def test_cluster_role_matches_what_the_source_lists():
    listed = {PLURALS[kind] for kind, _, _ in KINDS}
    listed |= {(group, plural) for _, group, _, plural in OPTIONAL_CUSTOM_KINDS}
    listed |= {PLURALS[kind] for kind, _ in DRA_LIST_METHODS}
    listed |= {(group, plural) for _, group, _, plural, _ in ADMISSION_CUSTOM_KINDS}
    # Gatekeeper's constraint kinds are discovered: the whole constraints group, and only it.
    gatekeeper = GATEKEEPER_GROUP_VERSION[0]
    listed |= {(gatekeeper, "*")}
    # The custom owners above pods' controllers (kube_owners): listed, whole groups, never
    # watched (a watch re-sync keeps the last full sync's).
    owners = {(group, "*") for group in OWNER_GROUPS}
    grants = granted()
    assert {(g, r) for g, r, _ in grants} == listed | owners
    assert {v for g, r, v in grants if (g, r) not in owners} == {"get", "list", "watch"}
    assert {v for g, r, v in grants if (g, r) in owners} == {"list"}
    assert not any(r == "secrets" for _, r, _ in grants)
    assert {g for g, r, _ in grants if r == "*"} == {gatekeeper, *OWNER_GROUPS}
