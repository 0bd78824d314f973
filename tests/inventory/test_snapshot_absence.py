"""A snapshot file holds only the kinds `kubectl get` was asked for: where it holds pods but no
ResourceQuota, NetworkPolicy, ClusterRoleBinding, Service or ServiceAccount, the run says what
the checks then read as absent, and how to include them."""

from __future__ import annotations

import json

import pytest

from inventory.models import SyncRun
from inventory.services import cluster_sync
from inventory.sources.files import SnapshotFileSource
from inventory.sync import cluster_get_or_create
from tests.posture.test_unread_kinds import COREDNS


def _read(tmp_path, kinds: list[str]) -> list[str]:
    items = [{"apiVersion": "v1", "kind": k, "metadata": {"name": k.lower()}} for k in kinds]
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    source = SnapshotFileSource([path])
    source.read(lambda kind, count: None)
    return source.warnings


def test_pods_without_the_kinds_read_as_absent_are_said(tmp_path):
    kinds = ["Node", "Pod", "NetworkPolicy", "Service", "ServiceAccount", "Namespace"]
    warnings = _read(tmp_path, kinds)
    assert len(warnings) == 2
    assert "no ResourceQuota, so K8S-001" in warnings[0] and "add resourcequotas" in warnings[0]
    assert "no ClusterRoleBinding" in warnings[1]


def test_pods_without_any_service_say_exposures_go_unseen(tmp_path):
    # Every cluster has the `default/kubernetes` Service: none means none was asked for.
    kinds = ["Pod", "ResourceQuota", "NetworkPolicy", "ClusterRoleBinding", "ServiceAccount"]
    (warning,) = _read(tmp_path, [*kinds, "Namespace"])
    assert "no Service, so K8S-006 sees no notebook" in warning
    assert "add services,ingresses" in warning


def test_a_full_capture_or_a_file_of_nodes_only_says_nothing(tmp_path):
    kinds = ["Pod", "ResourceQuota", "NetworkPolicy", "ClusterRoleBinding", "Service"]
    kinds += ["ServiceAccount", "Namespace"]
    assert _read(tmp_path, kinds) == []
    assert _read(tmp_path, ["Node"]) == []


def test_pods_without_service_accounts_say_pod010_cannot_see_their_cloud_identity(tmp_path):
    kinds = ["Pod", "ResourceQuota", "NetworkPolicy", "ClusterRoleBinding", "Service"]
    (warning,) = _read(tmp_path, [*kinds, "Namespace"])
    assert "no ServiceAccount, so POD-010" in warning and "GKE Workload Identity" in warning
    assert "add serviceaccounts" in warning


FULL = [
    "Pod",
    "ResourceQuota",
    "NetworkPolicy",
    "ClusterRoleBinding",
    "Service",
    "ServiceAccount",
    "Namespace",
]


def test_pods_without_namespaces_say_where_label_claims_and_pod_security_come_from(tmp_path):
    (warning,) = _read(tmp_path, FULL[:-1])
    assert "no Namespace, so tenants that claim namespaces by label" in warning
    assert "from the namespaces the last sync that read them stored" in warning
    assert "unknown where none did" in warning and "add namespaces" in warning


def _read_items(tmp_path, items: list[dict]) -> list[str]:
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    source = SnapshotFileSource([path])
    source.read(lambda kind, count: None)
    return source.warnings


def _items(kinds: list[str]) -> list[dict]:
    return [{"apiVersion": "v1", "kind": k, "metadata": {"name": k.lower()}} for k in kinds]


def test_an_openshift_snapshot_without_sccs_says_k8s009_cannot_judge(tmp_path):
    ocp = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "openshift-apiserver"}}
    (warning,) = _read_items(tmp_path, [*_items(FULL), ocp])
    assert "OpenShift cluster but holds no SecurityContextConstraints" in warning
    assert "kubectl get securitycontextconstraints -o json" in warning
    scc = {
        "apiVersion": "security.openshift.io/v1",
        "kind": "SecurityContextConstraints",
        "metadata": {"name": "restricted-v2"},
    }
    assert _read_items(tmp_path, [*_items(FULL), ocp, scc]) == []
    assert _read_items(tmp_path, _items(FULL)) == []  # not OpenShift: nothing to say


def _operator(kind: str = "Deployment") -> dict:
    container = {"name": "gpu-operator", "image": "nvcr.io/nvidia/gpu-operator:v24.9.2"}
    pod_spec = {"containers": [container]}
    spec = {"template": {"spec": pod_spec}} if kind == "Deployment" else pod_spec
    meta = {"name": "gpu-operator", "namespace": "gpu-operator"}
    return {
        "apiVersion": "apps/v1" if kind == "Deployment" else "v1",
        "kind": kind,
        "metadata": meta,
        "spec": spec,
    }


def test_the_gpu_operator_without_its_clusterpolicy_says_k8s004_cannot_see_it(tmp_path):
    (warning,) = _read_items(tmp_path, [*_items(FULL), _operator()])
    assert "runs the GPU Operator (Deployment gpu-operator/gpu-operator)" in warning
    assert "holds no ClusterPolicy" in warning and "add clusterpolicies.nvidia.com" in warning
    (warning,) = _read_items(tmp_path, [*_items(FULL), _operator("Pod")])
    assert "Pod gpu-operator/gpu-operator" in warning
    # Kyverno's ClusterPolicy is not the operator's.
    kyverno = {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "p"}}
    assert len(_read_items(tmp_path, [*_items(FULL), _operator(), kyverno])) == 1
    policy = {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {"name": "cp"}}
    assert _read_items(tmp_path, [*_items(FULL), _operator(), policy]) == []
    assert _read_items(tmp_path, _items(FULL)) == []  # no operator: nothing to say


@pytest.mark.django_db
def test_pods_naming_dra_claims_with_no_resourceclaim_say_the_claims_were_not_read(tmp_path):
    """The sync tells it from the snapshot read (inventory.kinds_read): a claim a pod names, or
    its template's claim once made, is an object; a pending pod's template claim may not be."""
    entry = {"name": "gpu", "resourceClaimTemplateName": "one-gpu"}
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "trainer", "namespace": "team-a"},
        "spec": {"resourceClaims": [entry]},
        "status": {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "trainer-gpu"}]},
    }
    others = [
        {"apiVersion": "v1", "kind": k, "metadata": {"name": k.lower(), "namespace": "team-a"}}
        for k in FULL[1:]
    ]
    cluster = cluster_get_or_create(name="absent")

    def sync(*items: dict) -> SyncRun:
        path = tmp_path / "snapshot.json"
        path.write_text(
            json.dumps({"apiVersion": "v1", "kind": "List", "items": [*items, *others]})
        )
        return cluster_sync(cluster=cluster, source=SnapshotFileSource([path]))

    run = sync(pod, COREDNS)  # kube-system's DNS: an export of a running cluster
    (warning,) = [w for w in run.warnings if "ResourceClaim" in w]
    assert "pods whose DRA ResourceClaims exist but no ResourceClaim" in warning
    assert "add resourceclaims" in warning
    assert "ResourceClaim" in run.kinds_unread  # the run records it as not read
    # With the claims read, nothing to say; nor for a pending pod whose claim is not made yet.
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "team-a"},
    }
    pending = {**pod, "status": {"phase": "Pending"}}
    for items in ((pod, claim), (pending,)):
        run = sync(*items, COREDNS)
        assert "ResourceClaim" not in run.kinds_unread
        assert not [w for w in run.warnings if "ResourceClaim" in w]
