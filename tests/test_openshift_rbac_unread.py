"""K8S-009 on an export of an OpenShift cluster that left its Roles and RoleBindings out: an SCC
allowing privileged pods may be granted to the tenant by a RoleBinding never read, so SCC
admission denying them as read is "cannot tell" (low, naming the kinds and the SCCs), never a
pass; with the RBAC read, a default cluster passes and a `use` grant opens, as before."""

from __future__ import annotations

from typing import Any

import pytest

from inventory.models import SyncRun
from tests.gke_world import by_check, container, pod
from tests.ocp_world import MONITORING, WORKER, monitoring_rbac, namespace, ocp_node, sync_and_score
from tests.posture.openshift_world import binding, default_sccs, scc_cluster_role

pytestmark = pytest.mark.django_db

EVERYONE = {
    "kind": "Group",
    "apiGroup": "rbac.authorization.k8s.io",
    "name": "system:authenticated",
}
RELEASE_IMAGE = "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:"
ALL_CONTROLS = ["privileged", "hostPID", "hostIPC", "hostNetwork", "hostPath", "capabilities"]


def world(*, roles: bool = True, extra: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    """An export of a running OpenShift cluster (pods in openshift-dns, none in kube-system):
    SCCs restricted-v2 (bound to every authenticated user) and privileged as OpenShift ships
    them, and tenant vision's GPU pod; with `roles`, the namespaced RBAC every cluster has."""
    dns = container("dns", RELEASE_IMAGE + "d" * 64)
    app = container("main", "registry.example.internal/vision/app@sha256:" + "c" * 64, gpus=1)
    shipped = ("restricted-v2", "privileged")
    items = [
        ocp_node(WORKER),
        *(namespace(ns) for ns in ("openshift-dns", MONITORING, "vision")),
        pod("openshift-dns", "dns-default-7xk2p", WORKER, [dns], "dns-default"),
        pod("vision", "train-0", WORKER, [app]),
        *(s for s in default_sccs() if s["metadata"]["name"] in shipped),
        *(scc_cluster_role(name) for name in shipped),
        binding(
            "ClusterRoleBinding",
            "system:openshift:scc:restricted-v2",
            "system:openshift:scc:restricted-v2",
            [EVERYONE],
        ),
        *(monitoring_rbac("openshift-dns") if roles else []),
        *extra,
    ]
    return {"apiVersion": "v1", "kind": "List", "items": items, "metadata": {}}


def privileged_for_vision() -> dict[str, Any]:
    """A RoleBinding in vision granting its default account `use` of the privileged SCC."""
    account = {"kind": "ServiceAccount", "name": "default", "namespace": "vision"}
    return binding(
        "RoleBinding",
        "default-privileged",
        "system:openshift:scc:privileged",
        [account],
        namespace="vision",
    )


def k8s009(tmp_path, exported: dict[str, Any]) -> list[dict]:
    return by_check(sync_and_score(tmp_path, exported), "K8S-009")


def test_with_its_rbac_read_a_default_cluster_enforces_as_before(tmp_path, personas):
    assert k8s009(tmp_path, world()) == []
    assert not set(SyncRun.objects.get().kinds_unread) & {"Role", "RoleBinding"}


def test_without_its_roles_and_rolebindings_k8s009_cannot_tell(tmp_path, personas):
    (finding,) = k8s009(tmp_path, world(roles=False))
    run = SyncRun.objects.get()
    assert {"Role", "RoleBinding"} <= set(run.kinds_unread)
    assert any("on OpenShift K8S-009 cannot tell which SCCs" in w for w in run.warnings)
    assert finding["severity"] == "low"
    assert finding["tenants"] == ["vision"]
    evidence = finding["evidence"]
    assert evidence["verdict"] == "unknown"
    assert evidence["enforced_controls"] == {}
    assert [k["kind"] for k in evidence["rbac_kinds_not_read"]] == ["Role", "RoleBinding"]
    assert "rolebindings" in evidence["rbac_kinds_not_read"][1]["grant"]
    assert evidence["sccs_rbac_may_grant"] == [{"scc": "privileged", "allows": ALL_CONTROLS}]
    assert evidence["basis"].startswith("unverified")
    assert "admission enforcement unknown" in finding["title"]
    assert "Role, RoleBinding were not read" in finding["title"]
    assert "SCC privileged" in finding["title"]


def test_a_rolebinding_granting_the_privileged_scc_opens_it_as_before(tmp_path, personas):
    (finding,) = k8s009(tmp_path, world(extra=(privileged_for_vision(),)))
    assert finding["severity"] == "high"
    assert finding["evidence"]["verdict"] == "not enforced"
    assert "SCC privileged (usable by ServiceAccount:vision/default)" in finding["title"]
    assert "rbac_kinds_not_read" not in finding["evidence"]


def test_a_grant_seen_open_is_not_resolved_by_an_export_without_rbac(tmp_path, personas):
    """The grant read once, then an export that left RBAC out: still open (cannot tell),
    never resolved on the RoleBinding not read."""
    (opened,) = k8s009(tmp_path, world(extra=(privileged_for_vision(),)))
    (after,) = k8s009(tmp_path, world(roles=False))
    assert after["id"] == opened["id"]
    assert after["status"] == "open"
    assert after["evidence"]["verdict"] == "unknown"
