"""DRIFT-006: RBAC reaching the GPU stack, pure between two states, then through two syncs (full
and watch) into events and findings."""

from __future__ import annotations

import copy

import pytest

from inventory import snapshot as snap
from inventory.drift import ClusterState, detect_drift
from inventory.models import DriftEvent
from inventory.services import cluster_sync, cluster_sync_from_snapshot
from inventory.sources.kube import KubeSettings, KubeSource
from inventory.sync import cluster_get_or_create
from posture.models import Finding
from posture.services import posture_evaluate
from tests.conftest import load_json
from tests.inventory.test_drift import write
from tests.kubeapi import FakeKubeAPI

OPERATOR = snap.Workload(
    "Deployment",
    "gpu-operator",
    "gpu-operator",
    images={"o": "nvcr.io/nvidia/gpu-operator:v24.9.2"},
)
PLUGIN = snap.Workload(
    "DaemonSet",
    "nvidia-device-plugin",
    "nvidia-device-plugin-daemonset",
    images={"p": "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"},
)


def rule(resources=("nodes",), verbs=("get", "list", "patch"), names=(), groups=("",)):
    return snap.PolicyRule(tuple(groups), tuple(resources), tuple(verbs), tuple(names))


def cluster_role(name: str, *rules: snap.PolicyRule, labels=None, aggregate=()) -> snap.Role:
    return snap.Role("ClusterRole", name, None, rules, tuple(aggregate), labels or {})


def crb(name: str, role: str, *subjects: snap.Subject) -> snap.RoleBinding:
    return snap.RoleBinding("ClusterRoleBinding", name, None, "ClusterRole", role, subjects)


def rb(ns: str, name: str, role: str, *subjects: snap.Subject) -> snap.RoleBinding:
    return snap.RoleBinding("RoleBinding", name, ns, "ClusterRole", role, subjects)


def group(name: str) -> snap.Subject:
    return snap.Subject("Group", name)


def sa(ns: str, name: str) -> snap.Subject:
    return snap.Subject("ServiceAccount", name, ns)


LABELLER = cluster_role("node-labeler", rule())
READER = cluster_role("node-reader", rule(verbs=("get", "list", "watch")))
EDIT = cluster_role("edit", rule(resources=("pods", "configmaps"), verbs=("create", "update")))
OPERATOR_CRB = crb("gpu-operator", "edit", sa("gpu-operator", "gpu-operator"))
BASE_ROLES = (LABELLER, READER, EDIT)


def state(*bindings: snap.RoleBinding, roles=BASE_ROLES) -> ClusterState:
    return ClusterState(
        workloads=(OPERATOR, PLUGIN), roles=tuple(roles), bindings=(OPERATOR_CRB, *bindings)
    )


def only_rbac(before: ClusterState, after: ClusterState) -> list:
    changes = detect_drift(before, after)
    assert {c.check_id for c in changes} <= {"DRIFT-006"}
    return changes


def test_a_new_clusterrolebinding_with_node_label_rights():
    (change,) = only_rbac(state(), state(crb("ops-labels", "node-labeler", group("beta-ops"))))
    assert (change.kind, change.subject_kind, change.subject_name) == (
        "rbac",
        "ClusterRoleBinding",
        "ops-labels",
    )
    assert change.before == {"present": False}
    assert change.after["new_node_label_subjects"] == ["Group:beta-ops"]
    assert change.after["node_verbs"] == ["patch"]
    assert change.after["role"] == "ClusterRole node-labeler"
    assert "node-label rights" in change.summary and "added" in change.summary


def test_a_role_widened_under_an_existing_binding():
    binding = crb("ops-read", "node-reader", group("beta-ops"))
    widened = cluster_role("node-reader", rule(verbs=("get", "list", "update")))
    (change,) = only_rbac(state(binding), state(binding, roles=(LABELLER, widened, EDIT)))
    assert change.before["node_verbs"] == [] and change.after["node_verbs"] == ["update"]
    assert "changed" in change.summary


def test_aggregation_brings_node_rights_to_a_bound_role():
    label = {"acme.io/aggregate-to-ops": "true"}
    ops = cluster_role("ops", aggregate=(label,))
    binding = crb("ops", "ops", group("beta-ops"))
    piece = cluster_role("ops-nodes", rule(verbs=("patch",)), labels=label)
    (change,) = only_rbac(
        state(binding, roles=(*BASE_ROLES, ops)), state(binding, roles=(*BASE_ROLES, ops, piece))
    )
    assert change.after["new_node_label_subjects"] == ["Group:beta-ops"]


def test_rights_on_named_nodes_only_still_count():
    named = cluster_role("label-gpu-7", rule(verbs=("patch",), names=("gpu-7",)))
    after = state(crb("b", "label-gpu-7", group("beta-ops")), roles=(*BASE_ROLES, named))
    (change,) = only_rbac(state(roles=(*BASE_ROLES, named)), after)
    assert change.after["node_verbs"] == ["patch"]


@pytest.mark.parametrize(
    "binding",
    [
        rb("tools", "borrowed", "edit", sa("gpu-operator", "gpu-operator")),
        crb("plugin-extra", "node-reader", sa("nvidia-device-plugin", "default")),
        rb(
            "tools",
            "borrowed",
            "edit",
            snap.Subject("User", "system:serviceaccount:gpu-operator:x"),
        ),
        rb("tools", "borrowed", "edit", group("system:serviceaccounts:gpu-operator")),
    ],
)
def test_a_new_binding_of_a_gpu_stack_service_account(binding):
    (change,) = only_rbac(state(), state(binding))
    assert change.after["new_gpu_stack_subjects"]
    assert "GPU stack service account" in change.summary


def test_a_stack_account_added_to_an_existing_binding():
    before = rb("gpu-operator", "extra", "edit", sa("gpu-operator", "a"))
    after = rb("gpu-operator", "extra", "edit", sa("gpu-operator", "a"), sa("gpu-operator", "b"))
    (change,) = only_rbac(state(before), state(after))
    assert change.after["new_gpu_stack_subjects"] == ["ServiceAccount:gpu-operator/b"]
    assert change.before["subjects"] == ["ServiceAccount:gpu-operator/a"]


@pytest.mark.parametrize(
    ("before", "after"),
    [
        pytest.param(state(), state(), id="nothing-changed"),
        pytest.param(
            state(), state(rb("team-a", "devs", "edit", group("alpha-devs"))), id="tenant-edit"
        ),
        pytest.param(
            state(crb("gone", "node-labeler", group("beta-ops"))), state(), id="binding-removed"
        ),
        pytest.param(
            state(), state(rb("team-a", "x", "node-labeler", group("beta-ops"))), id="rolebinding"
        ),
        pytest.param(
            state(crb("a", "node-labeler", group("beta-ops"))),
            state(
                crb("a", "node-labeler", group("beta-ops")),
                crb("b", "node-labeler", group("beta-ops")),
            ),
            id="held-already",
        ),
        pytest.param(
            state(), state(crb("readers", "node-reader", group("beta-ops"))), id="read-only"
        ),
        pytest.param(
            state(), state(rb("team-a", "x", "edit", sa("team-a", "default"))), id="tenant-sa"
        ),
    ],
)
def test_no_rbac_drift(before, after):
    assert detect_drift(before, after) == []


# --- through two syncs -------------------------------------------------------------------------

RBAC = "rbac.authorization.k8s.io/v1"


def _meta(name: str, ns: str | None = None) -> dict:
    m = {
        "name": name,
        "uid": f"uid-{name}",
        "resourceVersion": "812",
        "creationTimestamp": "2026-11-27T10:00:00Z",
    }
    return {**m, "namespace": ns} if ns else m


def rbac_objects() -> list[dict]:
    """A new node labeller for beta's group, and the operator's service account bound in a
    tenant namespace, as `kubectl get -o json` prints them."""
    ref = {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "node-labeler"}
    beta = {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "beta-ops"}
    operator = {"kind": "ServiceAccount", "name": "gpu-operator", "namespace": "gpu-operator"}
    rules = [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"]}]
    return [
        {
            "apiVersion": RBAC,
            "kind": "ClusterRole",
            "metadata": _meta("node-labeler"),
            "rules": rules,
        },
        {
            "apiVersion": RBAC,
            "kind": "ClusterRoleBinding",
            "metadata": _meta("beta-node-labels"),
            "roleRef": ref,
            "subjects": [beta],
        },
        {
            "apiVersion": RBAC,
            "kind": "RoleBinding",
            "metadata": _meta("operator-helper", "team-alpha"),
            "roleRef": ref,
            "subjects": [operator],
        },
    ]


def operator_binding() -> dict:
    """The GPU Operator's own cluster-wide binding, which every install has: where a snapshot
    reads ClusterRoleBindings, only it makes the operator's namespace the platform's."""
    role = {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "gpu-operator"}
    subject = {"kind": "ServiceAccount", "name": "gpu-operator", "namespace": "gpu-operator"}
    return {
        "apiVersion": RBAC,
        "kind": "ClusterRoleBinding",
        "metadata": _meta("gpu-operator"),
        "roleRef": role,
        "subjects": [subject],
    }


def system_rbac() -> list[dict]:
    """The operator's ClusterRole and a kube-system RoleBinding, which every cluster has: a
    sync that read none of a kind compares nothing of it (inventory.drift_scope)."""
    role = {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "extension-reader"}
    subject = {"kind": "ServiceAccount", "name": "bootstrap-signer", "namespace": "kube-system"}
    return [
        {"apiVersion": RBAC, "kind": "ClusterRole", "metadata": _meta("gpu-operator"), "rules": []},
        {
            "apiVersion": RBAC,
            "kind": "RoleBinding",
            "metadata": _meta("system:controller:bootstrap-signer", "kube-system"),
            "roleRef": role,
            "subjects": [subject],
        },
    ]


@pytest.mark.django_db
def test_rbac_drift_through_two_syncs(small_world, tmp_path):
    base = copy.deepcopy(load_json("small-cluster.json")["items"]) + [operator_binding()]
    base += system_rbac()
    cluster_sync_from_snapshot(cluster=small_world, paths=[write(tmp_path, base, "v1")])
    DriftEvent.objects.all().delete()  # the operator's binding: the world as it was before
    posture_evaluate()
    Finding.objects.filter(check_id="DRIFT-006").delete()
    objects = base + rbac_objects()
    run = cluster_sync_from_snapshot(cluster=small_world, paths=[write(tmp_path, objects, "v2")])
    assert run.changes["drift_events"] == 2
    events = {e.subject_name: e for e in DriftEvent.objects.filter(check_id="DRIFT-006")}
    assert set(events) == {"beta-node-labels", "operator-helper"}
    labels = events["beta-node-labels"]
    assert labels.kind == "rbac" and labels.before == {"present": False}
    assert labels.after["new_node_label_subjects"] == ["Group:beta-ops"]
    helper = events["operator-helper"]
    assert helper.subject_namespace == "team-alpha"
    assert helper.after["new_gpu_stack_subjects"] == ["ServiceAccount:gpu-operator/gpu-operator"]
    posture_evaluate()
    found = Finding.objects.filter(check_id="DRIFT-006", status="open")
    assert found.count() == 2
    finding = found.get(subject_name="beta-node-labels")
    # Whoever labels nodes steers every tenant on a GPU node.
    assert set(finding.tenants.values_list("slug", flat=True)) == {"alpha", "beta"}
    assert finding.evidence["after"]["new_node_label_subjects"] == ["Group:beta-ops"]
    assert finding.evidence["nodes_affected"] == ["gpu-ts-1"]
    # A quiet re-sync records nothing new.
    cluster_sync_from_snapshot(cluster=small_world, paths=[write(tmp_path, objects, "v3")])
    assert DriftEvent.objects.filter(check_id="DRIFT-006").count() == 2


@pytest.mark.django_db
def test_rbac_drift_found_by_a_watch_resync(small_world, tmp_path):
    with FakeKubeAPI(copy.deepcopy(load_json("small-cluster.json")["items"])) as api:
        source = KubeSource(
            kubeconfig=str(api.kubeconfig(tmp_path)),
            context="fake",
            settings=KubeSettings(page_size=50, read_timeout=5.0, watch_seconds=1),
        )
        cluster = cluster_get_or_create(name="live")
        assert cluster_sync(cluster=cluster, source=source).mode == "full"
        api.replace_objects(
            copy.deepcopy(load_json("small-cluster.json")["items"]) + rbac_objects()
        )
        cluster.refresh_from_db()
        run = cluster_sync(cluster=cluster, source=source)
    assert run.mode == "watch"
    names = set(
        DriftEvent.objects.filter(cluster=cluster, check_id="DRIFT-006").values_list(
            "subject_name", flat=True
        )
    )
    assert names == {"beta-node-labels", "operator-helper"}


@pytest.mark.parametrize("resources", [("nodes/status",), ("*/status",)])
def test_node_status_writes_are_node_label_rights_as_k8s003_reads_them(resources):
    status = cluster_role("node-status", rule(resources=resources, verbs=("patch",)))
    binding = crb("status", "node-status", group("beta-ops"))
    roles = (*BASE_ROLES, status)
    (change,) = only_rbac(state(roles=roles), state(binding, roles=roles))
    assert change.after["new_node_label_subjects"] == ["Group:beta-ops"]
