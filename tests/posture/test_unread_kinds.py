"""A sync that did not read a kind a check needs does not judge that check: its findings are
kept as they were (never resolved on what was not read) and say why; a later sync that reads
the kind judges it again."""

from __future__ import annotations

import copy
import json

import pytest

from inventory.kinds_read import kinds_unread
from inventory.models import SyncRun
from inventory.services import cluster_sync_from_snapshot
from inventory.sync import cluster_get_or_create
from posture.judged import checks_unjudged, unjudged_note
from posture.models import Finding, TenantScore
from posture.services import posture_evaluate
from tenants.services import tenants_apply
from tenants.spec import parse_tenants_document
from tests.conftest import api_client, load_json
from tests.posture.test_finding_pages import client_for

RBAC_KINDS = ("ClusterRole", "ClusterRoleBinding")


def rbac_objects(*, beta_may_label_nodes: bool) -> list[dict]:
    """A system ClusterRole and binding (every real cluster has them), and a ClusterRole that
    may patch nodes, bound to beta's group while `beta_may_label_nodes`."""
    system = [
        {
            "kind": "ClusterRole",
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "metadata": {"name": "system:basic-user"},
            "rules": [
                {
                    "apiGroups": ["authorization.k8s.io"],
                    "resources": ["selfsubjectreviews"],
                    "verbs": ["create"],
                }
            ],
        },
        {
            "kind": "ClusterRoleBinding",
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "metadata": {"name": "system:basic-user"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "system:basic-user",
            },
            "subjects": [
                {
                    "kind": "Group",
                    "name": "system:authenticated",
                    "apiGroup": "rbac.authorization.k8s.io",
                }
            ],
        },
        {  # the GPU Operator's own binding: where RBAC is read, it places the operator
            "kind": "ClusterRoleBinding",
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "metadata": {"name": "gpu-operator"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "system:basic-user",
            },
            "subjects": [
                {"kind": "ServiceAccount", "name": "default", "namespace": "gpu-operator"}
            ],
        },
    ]
    labeler = [
        {
            "kind": "ClusterRole",
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "metadata": {"name": "node-labeler"},
            "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["patch", "update"]}],
        },
        {
            "kind": "ClusterRoleBinding",
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "metadata": {"name": "beta-node-labeler"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "node-labeler",
            },
            "subjects": [
                {"kind": "Group", "name": "beta-ops", "apiGroup": "rbac.authorization.k8s.io"}
            ],
        },
    ]
    return system + (labeler if beta_may_label_nodes else [])


def system_roles() -> list[dict]:
    """kube-system's Role and RoleBinding every cluster has (kubeadm, EKS, GKE, AKS): the
    reader of the extension-apiserver-authentication ConfigMap, bound to the scheduler and
    the controller manager."""
    rules = [
        {
            "apiGroups": [""],
            "resources": ["configmaps"],
            "resourceNames": ["extension-apiserver-authentication"],
            "verbs": ["get", "list", "watch"],
        }
    ]
    name = "extension-apiserver-authentication-reader"
    return [
        {
            "kind": "Role",
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "metadata": {"name": name, "namespace": "kube-system"},
            "rules": rules,
        },
        {
            "kind": "RoleBinding",
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "metadata": {"name": f"system::{name}", "namespace": "kube-system"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": [
                {"kind": "User", "name": user, "apiGroup": "rbac.authorization.k8s.io"}
                for user in ("system:kube-controller-manager", "system:kube-scheduler")
            ],
        },
    ]


COREDNS = {  # every real cluster runs pods in kube-system: the sign of an export of one
    "kind": "Pod",
    "apiVersion": "v1",
    "metadata": {"name": "coredns-5d78c9869d-x7k2p", "namespace": "kube-system"},
    "spec": {
        "containers": [{"name": "coredns", "image": "registry.k8s.io/coredns/coredns:v1.11.1"}]
    },
    "status": {"phase": "Running"},
}


def snapshot(
    tmp_path,
    name: str,
    *,
    rbac: bool = True,
    configmaps: bool = True,
    exported: bool = True,
    roles: bool = True,
    extra: tuple[dict, ...] = (),
    **kw,
) -> str:
    """small-cluster.json as an export of a real cluster (`exported`: a kube-system pod and,
    with `roles`, kube-system's Role and RoleBinding), with `extra` objects."""
    items = copy.deepcopy(load_json("small-cluster.json")["items"])
    items = [o for o in items if o["metadata"].get("namespace") != "kube-system" or exported]
    if exported:
        items.append(copy.deepcopy(COREDNS))
        items += system_roles() if roles else []
    items += copy.deepcopy(list(extra))
    if not configmaps:
        items = [o for o in items if o["kind"] != "ConfigMap"]
    if rbac:
        items += rbac_objects(beta_may_label_nodes=kw.get("beta_may_label_nodes", True))
    path = tmp_path / name
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return str(path)


@pytest.fixture
def rbac_world(personas, tmp_path):
    tenants_apply(specs=parse_tenants_document(load_json("small-tenants.json")))
    cluster = cluster_get_or_create(name="lab")
    cluster_sync_from_snapshot(cluster=cluster, paths=[snapshot(tmp_path, "full.json")])
    posture_evaluate()
    return cluster


def beta_risk() -> float:
    return TenantScore.objects.filter(tenant__slug="beta").order_by("-computed_at", "-id")[0].risk


def only(check_id: str) -> Finding:
    [finding] = Finding.objects.filter(check_id=check_id)
    return finding


def test_always_present_kinds_read_none_of_are_unread_and_refused_ones_too():
    counts = {"Node": 2, "Pod": 5, "Namespace": 4, "ConfigMap": 2, "ResourceQuota": 0}
    assert kinds_unread(counts) == [
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "Service",
        "ServiceAccount",
    ]
    # A kind that may really have no object (ResourceQuota) is not certainly unread; a live
    # list that was refused is.
    assert "ResourceQuota" not in kinds_unread(counts)
    assert "ResourceClaim" in kinds_unread(counts, unlisted=("ResourceClaim",))


def test_checks_needing_a_kind_not_read_are_not_judged():
    unjudged = checks_unjudged(["ClusterRoleBinding"])
    assert {"K8S-003", "K8S-004", "K8S-005", "K8S-008", "DRA-001"} <= set(unjudged)
    assert {"SHARE-005", "STACK-008"} <= set(checks_unjudged(["ConfigMap"]))
    assert {"TEN-001", "K8S-009"} <= set(checks_unjudged(["Namespace"]))
    assert "POD-010" in checks_unjudged(["ServiceAccount"])
    assert "K8S-006" in checks_unjudged(["Service"])
    assert "SHARE-001" not in checks_unjudged(["ClusterRoleBinding", "ConfigMap", "Namespace"])
    assert unjudged_note("K8S-003", ["ClusterRoleBinding"]) == (
        "not re-judged in the last sync: it read no ClusterRoleBinding"
    )
    assert unjudged_note("SHARE-001", ["ClusterRoleBinding"]) == ""


@pytest.mark.django_db
def test_a_sync_without_rbac_keeps_the_rbac_findings_and_says_why(rbac_world, tmp_path, personas):
    before = only("K8S-003")
    assert before.status == "open" and before.tenants.filter(slug="beta").exists()
    risk = beta_risk()
    run = cluster_sync_from_snapshot(
        cluster=rbac_world, paths=[snapshot(tmp_path, "no-rbac.json", rbac=False)]
    )
    posture_evaluate()
    assert set(RBAC_KINDS) <= set(run.kinds_unread)
    listed = api_client(personas["security_lead"]).get(f"/api/v1/sync-runs/{run.pk}/").json()
    assert set(RBAC_KINDS) <= set(listed["kinds_unread"])  # automation sees what was not read
    after = only("K8S-003")
    # Not resolved on bindings that were never read, last seen when they were, risk unchanged.
    assert after.status == "open"
    assert after.last_seen == before.last_seen
    assert beta_risk() == risk
    body = api_client(personas["security_lead"]).get(f"/api/v1/findings/{after.pk}/").json()
    assert body["not_rejudged"] == (
        "not re-judged in the last sync: it read no ClusterRole or ClusterRoleBinding"
    )
    page = client_for(personas["security_lead"]).get(f"/findings/{after.pk}/")
    assert "not re-judged in the last sync" in page.content.decode()


@pytest.mark.django_db
def test_a_later_full_sync_judges_again_and_resolves_what_was_fixed(rbac_world, tmp_path):
    cluster_sync_from_snapshot(
        cluster=rbac_world, paths=[snapshot(tmp_path, "no-rbac.json", rbac=False)]
    )
    posture_evaluate()
    assert only("K8S-003").status == "open"
    fixed = snapshot(tmp_path, "fixed.json", beta_may_label_nodes=False)
    run = cluster_sync_from_snapshot(cluster=rbac_world, paths=[fixed])
    posture_evaluate()
    assert not set(RBAC_KINDS) & set(run.kinds_unread)
    assert only("K8S-003").status == "resolved"


@pytest.mark.django_db
def test_a_sync_without_configmaps_keeps_share005(rbac_world, tmp_path):
    before = only("SHARE-005")
    assert before.status == "open"
    risk = beta_risk()
    cluster_sync_from_snapshot(
        cluster=rbac_world, paths=[snapshot(tmp_path, "no-cm.json", configmaps=False)]
    )
    posture_evaluate()
    after = only("SHARE-005")
    assert after.status == "open" and after.last_seen == before.last_seen
    assert beta_risk() == risk  # nor a DRIFT-001 about ConfigMaps that were not read
    assert "ConfigMap" in SyncRun.objects.order_by("-id")[0].kinds_unread


@pytest.mark.django_db
def test_namespaces_not_read_leave_owner_and_pod_security_unknown(personas, tmp_path):
    """A snapshot of nodes and pods only: beta claims beta-prod by its label, which was not
    read; TEN-001 and K8S-009 say what they could not see rather than "no tenant owns it" and
    "no PSA enforce"."""
    tenants_apply(specs=parse_tenants_document(load_json("small-tenants.json")))
    cluster = cluster_get_or_create(name="lab")
    items = [o for o in load_json("small-cluster.json")["items"] if o["kind"] in ("Node", "Pod")]
    path = tmp_path / "nodes-pods.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    run = cluster_sync_from_snapshot(cluster=cluster, paths=[str(path)])
    assert any("no Namespace, so tenants that claim namespaces by label" in w for w in run.warnings)
    posture_evaluate()
    ten = Finding.objects.get(check_id="TEN-001", subject_name="beta-prod")
    assert "no tenant owns it" not in ten.title
    assert "its labels were not read, so its owner is unknown" in ten.title
    assert ten.evidence["namespace_labels"] == "unknown"
    assert ten.evidence["owner"].startswith("unknown: the namespace's labels were not read")
    assert Finding.objects.filter(check_id="K8S-009").exists()
    for k8s009 in Finding.objects.filter(check_id="K8S-009"):
        assert "no PSA enforce" not in k8s009.title
        assert "admission enforcement unknown" in k8s009.title
        assert "its Namespace object (Pod Security labels) was not read" in k8s009.title
        assert k8s009.evidence["verdict"] == "unknown"
        assert k8s009.evidence["pod_security_labels"] == "unknown"


@pytest.mark.django_db
def test_a_snapshot_whose_pods_name_claims_it_holds_none_of_records_them_unread(personas, tmp_path):
    items = copy.deepcopy(load_json("small-cluster.json")["items"])
    pod = next(
        o for o in items if o["kind"] == "Pod" and o["metadata"]["namespace"] == "team-alpha"
    )
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]
    items.append(copy.deepcopy(COREDNS))  # an export of a running cluster
    path = tmp_path / "claims.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    run = cluster_sync_from_snapshot(cluster=cluster_get_or_create(name="lab"), paths=[str(path)])
    assert "ResourceClaim" in run.kinds_unread
    assert any("but no ResourceClaim" in w for w in run.warnings)


def test_a_hand_written_world_is_taken_at_its_word(personas, tmp_path):
    # No kube-system pod: not an export of a running cluster, so none of a kind is none of
    # it, and the fix (the binding removed, with every other binding) resolves K8S-003.
    tenants_apply(specs=parse_tenants_document(load_json("small-tenants.json")))
    cluster = cluster_get_or_create(name="written")
    cluster_sync_from_snapshot(
        cluster=cluster, paths=[snapshot(tmp_path, "full.json", exported=False)]
    )
    posture_evaluate()
    assert only("K8S-003").status == "open"
    bare = snapshot(tmp_path, "bare.json", rbac=False, exported=False)
    cluster_sync_from_snapshot(cluster=cluster, paths=[bare])
    posture_evaluate()
    assert only("K8S-003").status == "resolved"
    assert SyncRun.objects.filter(cluster=cluster).order_by("-id")[0].kinds_unread == []
