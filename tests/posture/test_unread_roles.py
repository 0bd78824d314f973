"""Every real cluster has Roles and RoleBindings (kube-system's): an export of one that holds
none did not export namespaced RBAC, so the checks that read it (K8S-003, K8S-004, K8S-005,
K8S-008, DRA-001) are not judged by it. Their findings stay open, saying why, rather than
resolving because "nobody is granted"; a hand-written world is taken at its word."""

from __future__ import annotations

import pytest

from inventory.kinds_read import exported_from_a_real_cluster, kinds_unread, unread_warnings
from inventory.services import cluster_sync_from_snapshot
from inventory.sync import cluster_get_or_create
from posture.judged import checks_unjudged
from posture.services import posture_evaluate
from tenants.services import tenants_apply
from tenants.spec import parse_tenants_document
from tests.conftest import api_client, load_json
from tests.posture.test_unread_kinds import only, snapshot

# beta's group may create pods in alpha's namespace, through a Role and a RoleBinding there.
DEPLOYER = (
    {
        "kind": "Role",
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "metadata": {"name": "deployer", "namespace": "team-alpha"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["create", "delete"]}],
    },
    {
        "kind": "RoleBinding",
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "metadata": {"name": "beta-deployer", "namespace": "team-alpha"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "deployer"},
        "subjects": [
            {"kind": "Group", "name": "beta-ops", "apiGroup": "rbac.authorization.k8s.io"}
        ],
    },
)


def cross_tenant():
    return only("K8S-008")


@pytest.fixture
def exported_world(personas, tmp_path):
    tenants_apply(specs=parse_tenants_document(load_json("small-tenants.json")))
    cluster = cluster_get_or_create(name="lab")
    cluster_sync_from_snapshot(
        cluster=cluster, paths=[snapshot(tmp_path, "a.json", extra=DEPLOYER)]
    )
    posture_evaluate()
    return cluster


def test_roles_and_rolebindings_are_always_present_kinds():
    counts = {"ClusterRole": 60, "ClusterRoleBinding": 50, "Role": 0}
    assert {"Role", "RoleBinding"} <= set(kinds_unread(counts))
    assert not {"Role", "RoleBinding"} & set(kinds_unread(counts, real_cluster=False))
    for check_id in ("K8S-003", "K8S-004", "K8S-008", "DRA-001"):
        assert checks_unjudged(["Role"])[check_id] == ("Role",)
    assert checks_unjudged(["RoleBinding"])["K8S-005"] == ("RoleBinding",)
    assert "K8S-005" not in checks_unjudged(["Role"])  # it reads no Role


@pytest.mark.django_db
def test_an_export_without_roles_keeps_the_cross_tenant_finding_open(
    exported_world, tmp_path, personas
):
    before = cross_tenant()
    assert before.status == "open" and before.subject_name == "beta-deployer"
    # The same cluster exported without Roles and RoleBindings (ClusterRoles still there).
    run = cluster_sync_from_snapshot(
        cluster=exported_world, paths=[snapshot(tmp_path, "b.json", roles=False)]
    )
    posture_evaluate()
    assert {"Role", "RoleBinding"} <= set(run.kinds_unread)
    assert sum("no Role or no RoleBinding" in w for w in run.warnings) == 1
    after = cross_tenant()
    assert after.status == "open"
    assert after.last_seen == before.last_seen
    body = api_client(personas["security_lead"]).get(f"/api/v1/findings/{after.pk}/").json()
    assert body["not_rejudged"] == (
        "not re-judged in the last sync: it read no Role or RoleBinding"
    )


@pytest.mark.django_db
def test_an_export_with_roles_judges_and_resolves_the_removed_binding(exported_world, tmp_path):
    # kube-system's Role and binding read, beta's binding gone: judged, and resolved.
    run = cluster_sync_from_snapshot(cluster=exported_world, paths=[snapshot(tmp_path, "c.json")])
    posture_evaluate()
    assert not {"Role", "RoleBinding"} & set(run.kinds_unread)
    assert cross_tenant().status == "resolved"


@pytest.mark.django_db
def test_a_hand_written_world_without_roles_is_judged(personas, tmp_path):
    tenants_apply(specs=parse_tenants_document(load_json("small-tenants.json")))
    cluster = cluster_get_or_create(name="written")
    written = snapshot(tmp_path, "a.json", exported=False, extra=DEPLOYER)
    cluster_sync_from_snapshot(cluster=cluster, paths=[written])
    posture_evaluate()
    assert cross_tenant().status == "open"
    run = cluster_sync_from_snapshot(
        cluster=cluster, paths=[snapshot(tmp_path, "b.json", exported=False)]
    )
    posture_evaluate()
    assert run.kinds_unread == []
    assert cross_tenant().status == "resolved"


DEVICE_PLUGIN_POD = {  # a hand-written world's device plugin, in kube-system as many put it
    "kind": "Pod",
    "apiVersion": "v1",
    "metadata": {"name": "nvidia-device-plugin-daemonset-7xk2p", "namespace": "kube-system"},
    "spec": {
        "nodeName": "gpu-node-1",
        "containers": [{"name": "plugin", "image": "nvcr.io/nvidia/k8s-device-plugin:v0.17.1"}],
    },
    "status": {"phase": "Running"},
}


def test_only_a_clusters_own_plumbing_in_kube_system_shows_an_export():
    assert not exported_from_a_real_cluster([("kube-system", "nvidia-device-plugin-x")])
    assert not exported_from_a_real_cluster([("team-a", "coredns-5d78c9869d-x7k2p")])
    for name in ("coredns-5d78c9869d-x7k2p", "kube-proxy-8wq2t", "aws-node-9x2lm", "etcd-cp-1"):
        assert exported_from_a_real_cluster([("kube-system", name)])


@pytest.mark.django_db
def test_a_written_world_with_its_device_plugin_in_kube_system_is_judged(personas, tmp_path):
    # Its kube-system holds the device plugin, not a cluster's DNS, CNI or kube-proxy: what it
    # omits is absent, so the binding removed resolves and no kind reads as unread.
    tenants_apply(specs=parse_tenants_document(load_json("small-tenants.json")))
    cluster = cluster_get_or_create(name="written")
    plugin = (DEVICE_PLUGIN_POD,)
    first = snapshot(tmp_path, "a.json", exported=False, extra=(*plugin, *DEPLOYER))
    cluster_sync_from_snapshot(cluster=cluster, paths=[first])
    posture_evaluate()
    assert cross_tenant().status == "open"
    second = snapshot(tmp_path, "b.json", exported=False, extra=plugin)
    run = cluster_sync_from_snapshot(cluster=cluster, paths=[second])
    posture_evaluate()
    assert run.kinds_unread == []
    assert cross_tenant().status == "resolved"


def test_an_openshift_export_shows_itself_by_its_own_plumbing_namespaces():
    # OpenShift runs no pod in kube-system (rtpartial2 k48): its DNS and network show it.
    assert exported_from_a_real_cluster([("openshift-dns", "dns-default-8x2pq")])
    assert exported_from_a_real_cluster([("openshift-ovn-kubernetes", "ovnkube-node-4kq9z")])
    assert not exported_from_a_real_cluster([("openshift-gpu-operator", "gpu-operator-5c9d")])


def test_an_export_without_namespaced_rbac_says_so_once():
    # rtpartial2 k3: Role and RoleBinding unread were recorded but never said.
    for unread in (["Role"], ["RoleBinding"], ["Role", "RoleBinding"]):
        (warning,) = unread_warnings(unread)
        assert "no Role or no RoleBinding" in warning
        assert "add roles,rolebindings to `kubectl get`" in warning
    assert unread_warnings(["ServiceAccount"]) == []  # said by the snapshot file's own warning
