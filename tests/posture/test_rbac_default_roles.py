"""The ClusterRoles every cluster has (cluster-admin, admin, edit, view) grant their default
rules to a binding even when the snapshot did not hold them; one the snapshot holds wins."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import posture.rules  # noqa: F401  (registers the checks)
from inventory.rbac import rule_allows
from inventory.rbac_defaults import DEFAULT_CLUSTER_ROLES, missing_defaults
from inventory.services import cluster_sync_from_snapshot
from inventory.snapshot import Role
from inventory.sources.normalise import normalise
from inventory.sync import cluster_get_or_create
from posture.inputs import PostureInputs
from posture.models import Finding
from posture.rules.registry import run_checks
from posture.services import posture_evaluate
from tenants.services import tenants_apply
from tenants.spec import parse_tenants_document
from tests.conftest import load_json
from tests.posture import test_rules_cross_tenant as xt
from tests.posture import test_rules_rbac as rbac_world
from tests.posture.test_rbac_escalation_paths import DEPLOYER, NODE_PATCH
from tests.posture.test_unread_kinds import snapshot

NAMESPACES = [xt.namespace(n) for n in ("alpha", "beta", "clinical", "kube-system")]
READ_ONLY = [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["get", "list", "watch"]}]


def world(*objects: dict) -> PostureInputs:
    """No ClusterRole unless the test gives one (unlike the cross-tenant tests' world)."""
    return PostureInputs("lab", normalise([*NAMESPACES, *objects]), (xt.ALPHA, xt.BETA, xt.CLIN))


def k8s008(*objects: dict) -> list:
    return run_checks(world(*objects), only=["K8S-008"])


def test_a_binding_to_edit_the_snapshot_did_not_hold_writes_in_the_namespace():
    found = k8s008(xt.rb("alpha", "Group:beta-users", "edit"))
    assert len(found) == 1
    evidence = found[0].evidence
    assert (evidence["binding"], evidence["role"]) == (
        "RoleBinding alpha/edit-in-alpha",
        "ClusterRole edit",
    )
    assert found[0].tenants == ("alpha", "beta")
    assert [e["namespace"] for e in evidence["namespaces"]] == ["alpha"]
    assert {"create", "update", "patch", "delete"} <= set(evidence["write_verbs"])
    # The evidence says where edit's rules came from, on every grant it shows.
    notes = {g.get("role_rules_from") for g in evidence["grants"]}
    assert notes == {
        "Kubernetes' defaults: the snapshot held no ClusterRole edit, which the API server "
        "creates on every cluster"
    }


@pytest.mark.parametrize("role_name", ["admin", "cluster-admin"])
def test_admin_and_cluster_admin_stand_in_too(role_name):
    found = k8s008(xt.rb("alpha", "Group:beta-users", role_name))
    assert [e["namespace"] for e in found[0].evidence["namespaces"]] == ["alpha"]


def test_a_binding_to_view_the_snapshot_did_not_hold_writes_nothing():
    assert k8s008(xt.rb("alpha", "Group:beta-users", "view")) == []


def test_an_edit_clusterrole_in_the_snapshot_wins_over_the_default():
    found = k8s008(xt.cluster_role("edit", READ_ONLY), xt.rb("alpha", "Group:beta-users", "edit"))
    assert found == []


def test_grants_through_a_role_the_snapshot_held_say_nothing_of_defaults():
    writer = xt.cluster_role("writer", xt.EDIT_RULES)
    found = k8s008(writer, xt.rb("alpha", "Group:beta-users", "writer"))
    assert all("role_rules_from" not in g for g in found[0].evidence["grants"])


def test_a_snapshot_role_labelled_to_aggregate_into_view_adds_to_the_default():
    # A CRD's role aggregated into view (as Kubeflow's and Ray's are): view now writes.
    label = {"rbac.authorization.k8s.io/aggregate-to-view": "true"}
    jobs = [{"apiGroups": ["ray.io"], "resources": ["rayjobs"], "verbs": ["create"]}]
    crd_role = xt.cluster_role("ray-view", jobs, labels=label)
    found = k8s008(crd_role, xt.rb("alpha", "Group:beta-users", "view"))
    grants = found[0].evidence["grants"]
    assert [(g["aggregated_from"], g["rule"]["resources"]) for g in grants] == [
        ("ray-view", ["rayjobs"])
    ]


def test_cluster_admin_bound_cluster_wide_may_patch_nodes():
    node = {"apiVersion": "v1", "kind": "Node", "metadata": xt.meta("gpu-1")}
    binding = xt.binding("ops", "cluster-admin", "Group:beta-users")
    assert run_checks(world(node, binding), only=["K8S-003"])


def test_the_escalation_paths_read_a_stand_in_role_too():
    """edit (not in the snapshot) in namespace tools runs pods there, so as tools/deployer,
    which may relabel every node: K8S-003 on the binding to edit, naming that path."""
    ours = rbac_world.rb("tools", "devs-edit", "edit", rbac_world.DEVS)
    found = run_checks(rbac_world.world([NODE_PATCH], [DEPLOYER, ours]), only=["K8S-003"])
    [draft] = [d for d in found if d.subject_name == "devs-edit"]
    assert any("ServiceAccount tools/deployer" in p for p in draft.evidence["escalation"])


def _allows(role: str, verb: str, group: str, resource: str) -> bool:
    rules = DEFAULT_CLUSTER_ROLES[role].rules
    return any(rule_allows(r, verb, group, resource) for r in rules)


@pytest.mark.parametrize(
    ("verb", "group", "resource", "roles"),
    [
        # What the checks ask about, by role: configmaps (K8S-004), exec and pods and their
        # controllers (running code: escalation paths), tokens, the namespace's RBAC.
        ("update", "", "configmaps", {"cluster-admin", "admin", "edit"}),
        ("create", "", "pods/exec", {"cluster-admin", "admin", "edit"}),
        ("create", "", "pods", {"cluster-admin", "admin", "edit"}),
        ("patch", "apps", "deployments", {"cluster-admin", "admin", "edit"}),
        ("create", "batch", "jobs", {"cluster-admin", "admin", "edit"}),
        ("create", "", "serviceaccounts/token", {"cluster-admin", "admin", "edit"}),
        ("impersonate", "", "serviceaccounts", {"cluster-admin", "admin", "edit"}),
        ("get", "", "secrets", {"cluster-admin", "admin", "edit"}),
        ("create", "rbac.authorization.k8s.io", "rolebindings", {"cluster-admin", "admin"}),
        ("bind", "rbac.authorization.k8s.io", "clusterroles", {"cluster-admin"}),
        ("patch", "", "nodes", {"cluster-admin"}),
        ("get", "", "pods", {"cluster-admin", "admin", "edit", "view"}),
    ],
)
def test_the_default_rules_grant_what_kubernetes_gives_each_role(verb, group, resource, roles):
    assert {r for r in DEFAULT_CLUSTER_ROLES if _allows(r, verb, group, resource)} == roles


def test_view_writes_nothing():
    writes = ("create", "update", "patch", "delete", "deletecollection", "escalate", "bind")
    assert not any(set(r.verbs) & set(writes) for r in DEFAULT_CLUSTER_ROLES["view"].rules)


def test_only_the_defaults_the_snapshot_did_not_hold_stand_in():
    held = (Role("ClusterRole", "edit"), Role("Role", "view", "alpha"))
    assert [r.name for r in missing_defaults(held)] == ["cluster-admin", "admin", "view"]


# --- a real export that left ClusterRoles out ------------------------------------------------


@pytest.mark.django_db
def test_an_export_without_clusterroles_still_reports_a_binding_to_edit(personas, tmp_path):
    """ClusterRoles unread (an export of a running cluster holding none): the RBAC checks are
    not re-judged, so what they found before stays (tests/posture/test_unread_kinds.py), and
    what the defaults show is reported as new, its evidence saying where the rules came from."""
    tenants_apply(specs=parse_tenants_document(load_json("small-tenants.json")))
    path = tmp_path / "bindings-only.json"
    document = json.loads(Path(snapshot(tmp_path, "export.json", rbac=False)).read_text())
    document["items"].append(xt.rb("team-alpha", "Group:beta-ops", "edit"))
    path.write_text(json.dumps(document))
    cluster = cluster_get_or_create(name="lab")
    run = cluster_sync_from_snapshot(cluster=cluster, paths=[path])
    posture_evaluate()
    assert "ClusterRole" in run.kinds_unread
    [finding] = Finding.objects.filter(check_id="K8S-008")
    assert finding.status == "open"
    assert sorted(finding.tenants.values_list("slug", flat=True)) == ["alpha", "beta"]
    notes = {g.get("role_rules_from", "") for g in finding.evidence["grants"]}
    assert all(
        n.startswith("Kubernetes' defaults: the snapshot held no ClusterRole edit") for n in notes
    )
