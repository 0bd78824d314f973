"""A tenant viewer never reads the name of a binding another tenant's principals are a subject
of, outside the viewer's own namespaces. A RoleBinding in the platform namespace gpu-operator,
named after beta ("beta-ops-cm-editors"), lets alpha's and beta's groups edit the device
plugin's time-slicing ConfigMap: K8S-004 affects both, so alpha's viewer reads the finding, but
not the binding's name (nor its Role's, named after beta too). A security lead reads both."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from tests.conftest import api_client, load_json

pytestmark = pytest.mark.django_db

BINDING, ROLE = "beta-ops-cm-editors", "beta-ops-cm-edit"


def _rbac() -> list[dict]:
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"namespace": "gpu-operator", "name": ROLE},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["update", "patch"]}],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"namespace": "gpu-operator", "name": BINDING},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": ROLE},
        "subjects": [
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "alpha-devs"},
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "beta-ops"},
        ],
    }
    return [role, binding]


@pytest.fixture
def rbac_world(personas, tmp_path):
    from inventory.services import cluster_sync_from_snapshot
    from inventory.sync import cluster_get_or_create
    from posture.services import posture_evaluate
    from tenants.services import tenants_apply
    from tenants.spec import parse_tenants_document

    tenants_apply(specs=parse_tenants_document(load_json("small-tenants.json")))
    document = load_json("small-cluster.json")
    document["items"] += _rbac()
    path = tmp_path / "lab.json"
    path.write_text(json.dumps(document))
    cluster = cluster_get_or_create(name="lab")
    cluster_sync_from_snapshot(cluster=cluster, paths=[path])
    posture_evaluate()
    return cluster


def _page(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_a_viewer_does_not_read_a_platform_bindings_name_that_names_another_tenant(
    rbac_world, personas
):
    lead = api_client(personas["security_lead"]).get("/api/v1/findings/?check=K8S-004").json()
    ours = [f for f in lead["results"] if f["subject_name"] == BINDING]
    assert ours and set(ours[0]["tenants"]) == {"alpha", "beta"}
    finding_id = ours[0]["id"]

    api = api_client(personas["viewer_alpha"])
    listed = api.get("/api/v1/findings/?check=K8S-004")
    assert listed.status_code == 200
    seen = [f for f in listed.json()["results"] if f["id"] == finding_id]
    assert seen and seen[0]["tenants"] == ["alpha"]
    assert seen[0]["subject_namespace"] == "gpu-operator"
    assert seen[0]["subject_name"] == "(another tenant's object)"
    detail = api.get(f"/api/v1/findings/{finding_id}/")
    for body in (listed.content, detail.content):
        assert BINDING.encode() not in body and ROLE.encode() not in body
        assert b"beta-ops" not in body

    page = _page(personas["viewer_alpha"]).get(f"/findings/{finding_id}/")
    assert page.status_code == 200
    assert BINDING.encode() not in page.content and ROLE.encode() not in page.content
    assert b"(another tenant&#x27;s object)" in page.content or b"another tenant" in page.content

    lead_page = _page(personas["security_lead"]).get(f"/findings/{finding_id}/")
    assert BINDING.encode() in lead_page.content


def _binding(namespace: str, name: str, *groups: str) -> dict:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"namespace": namespace, "name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": g} for g in groups
        ],
    }


def test_which_binding_names_each_viewer_reads(personas, tmp_path):
    """Outside a viewer's namespaces a binding is theirs to read by name only if no other
    tenant's principal is its subject; in their own namespace every binding is theirs."""
    from inventory.presenter import hidden_scope_for
    from inventory.services import cluster_sync_from_snapshot
    from inventory.sync import cluster_get_or_create
    from tenants.services import tenants_apply
    from tenants.spec import parse_tenants_document

    tenants_apply(specs=parse_tenants_document(load_json("small-tenants.json")))
    document = load_json("small-cluster.json")
    document["items"] += [
        _binding("gpu-operator", "alpha-readers", "alpha-devs"),
        _binding("gpu-operator", "beta-readers", "beta-ops"),
        _binding("gpu-operator", "platform-readers", "platform-sre"),
        _binding("team-alpha", "beta-guests", "beta-ops"),
    ]
    path = tmp_path / "lab.json"
    path.write_text(json.dumps(document))
    cluster_sync_from_snapshot(cluster=cluster_get_or_create(name="lab"), paths=[path])

    alpha = hidden_scope_for(personas["viewer_alpha"]).objects
    beta = hidden_scope_for(personas["viewer_beta"]).objects
    assert "beta-readers" in alpha and "alpha-readers" not in alpha
    assert "alpha-readers" in beta and "beta-readers" not in beta
    assert "platform-readers" not in alpha | beta
    # In alpha's own namespace: alpha's to read (and act on K8S-008 with); beta's viewer has it
    # hidden with alpha's namespace, as every object there, and by its bare name, which the
    # K8S-008 title uses ("RoleBinding beta-guests lets tenant beta ...").
    assert "beta-guests" not in alpha
    assert "beta-guests" in beta
