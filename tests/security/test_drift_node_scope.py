"""A tenant viewer's drift events and counts are of their scope (docs/access.md): beside the
small world's shared gpu-ts-1 (alpha and beta), gpu-b-1 runs only beta's pod. Alpha's viewer
gets 404 for gpu-b-1, so a change of its taints is neither listed in /api/v1/drift-events/
nor in the cluster page's "Configuration drift", and gpu-b-1 is named in neither; a change
that reaches both nodes names only gpu-ts-1 to them. A change on gpu-ts-1 whose before and
after differ only in a name hidden from them is told as such, never as "no field differs".
The clusters API counts the GPU nodes they may see, as their cluster page does."""

from __future__ import annotations

import copy
import json

import pytest
from django.test import Client
from django.utils import timezone

from tests.conftest import api_client, load_json

pytestmark = pytest.mark.django_db

ONLY_BETA = "gpu-b-1"


def _beta_node_items(items: list[dict]) -> list[dict]:
    """gpu-b-1, a copy of gpu-ts-1 without sharing, and beta's pod on it alone."""
    shared = next(i for i in items if i["kind"] == "Node" and i["metadata"]["name"] == "gpu-ts-1")
    node = copy.deepcopy(shared)
    node["metadata"].update(name=ONLY_BETA, uid=f"uid--{ONLY_BETA}")
    node["metadata"]["labels"] = {
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
        "nvidia.com/gpu.count": "1",
        "kubernetes.io/hostname": ONLY_BETA,
    }
    node["status"]["capacity"]["nvidia.com/gpu"] = "1"
    node["status"]["allocatable"] = {"nvidia.com/gpu": "1"}
    theirs = next(i for i in items if i["kind"] == "Pod" and i["metadata"]["name"] == "inference-0")
    pod = copy.deepcopy(theirs)
    pod["metadata"].update(name="scorer-0", uid="uid-beta-prod-scorer-0")
    pod["spec"]["nodeName"] = ONLY_BETA
    return [node, pod]


@pytest.fixture
def drift_world(personas, tmp_path):
    from inventory.models import DriftEvent, SyncRun
    from inventory.services import cluster_sync_from_snapshot
    from inventory.sync import cluster_get_or_create
    from tenants.services import tenants_apply
    from tenants.spec import parse_tenants_document

    tenants = load_json("small-tenants.json")
    tenants["tenants"].append({"slug": "gamma", "name": "Gamma Labs", "trust_class": "external"})
    tenants_apply(specs=parse_tenants_document(tenants))
    document = load_json("small-cluster.json")
    document["items"] += _beta_node_items(document["items"])
    path = tmp_path / "lab.json"
    path.write_text(json.dumps(document))
    cluster = cluster_get_or_create(name="lab")
    cluster_sync_from_snapshot(cluster=cluster, paths=[path])
    run = SyncRun.objects.filter(cluster=cluster).latest("id")
    now = timezone.now()

    def event(name: str, nodes: list[str], before: dict, after: dict, **fields) -> None:
        DriftEvent.objects.create(
            cluster=cluster,
            sync_run=run,
            kind=fields.pop("kind", "node"),
            check_id=fields.pop("check_id", "DRIFT-003"),
            subject_kind=fields.pop("subject_kind", "Node"),
            subject_name=name,
            summary=fields.pop("summary", f"labels or taints of GPU node {name} changed"),
            before=before,
            after=after,
            nodes=nodes,
            detected_at=now,
        )

    # Only beta's node: out of alpha's scope.
    event(ONLY_BETA, [ONLY_BETA], {"labels": {"pool": "a"}}, {"labels": {"pool": "b"}})
    # The shared node, whose taint went from naming beta to naming gamma: both sides read
    # "(another tenant)" to alpha.
    taint_before = {"taints": ["gpuposture.io/tenant=beta:NoSchedule"], "pool": "x"}
    taint_after = {"taints": ["gpuposture.io/tenant=gamma:NoSchedule"], "pool": "x"}
    event("gpu-ts-1", ["gpu-ts-1"], {"labels": {"owner": "beta"}}, {"labels": {"owner": "x"}})
    event("gpu-ts-1", ["gpu-ts-1"], taint_before, taint_after, summary="taint of gpu-ts-1")
    # A device-plugin config both nodes use; and an RBAC change that names no node.
    event(
        "time-slicing-config",
        ["gpu-ts-1", ONLY_BETA],
        {"replicas": 2},
        {"replicas": 4},
        kind="sharing_config",
        check_id="DRIFT-001",
        subject_kind="ConfigMap",
        summary="device-plugin config gpu-operator/time-slicing-config key ts-4 changed",
    )
    event(
        "gpu-operator-node-labellers",
        [],
        {"present": False},
        {"subjects": ["serviceaccount:gpu-operator:gpu-operator"]},
        kind="rbac",
        check_id="DRIFT-006",
        subject_kind="ClusterRoleBinding",
        summary="ClusterRoleBinding gpu-operator-node-labellers added",
    )
    return cluster


def _page(user) -> str:
    client = Client()
    client.force_login(user)
    response = client.get("/clusters/lab/")
    assert response.status_code == 200
    return response.content.decode()


def test_a_drift_event_of_a_node_outside_the_viewers_scope_is_not_listed(drift_world, personas):
    lead = api_client(personas["security_lead"]).get("/api/v1/drift-events/").json()
    assert lead["count"] == 5
    assert any(ONLY_BETA in e["summary"] for e in lead["results"])

    viewer = api_client(personas["viewer_alpha"])
    node = next(
        n
        for n in api_client(personas["security_lead"]).get("/api/v1/nodes/").json()["results"]
        if n["name"] == ONLY_BETA
    )
    assert viewer.get(f"/api/v1/nodes/{node['id']}/").status_code == 404
    listed = viewer.get("/api/v1/drift-events/")
    assert listed.status_code == 200
    assert listed.json()["count"] == 4
    assert ONLY_BETA not in listed.content.decode()
    # The config both nodes use is shown, naming only the node alpha may see.
    config = next(e for e in listed.json()["results"] if e["subject_kind"] == "ConfigMap")
    assert config["nodes"] == ["gpu-ts-1"]
    # A change naming no node reaches the whole GPU stack: shown.
    assert any(e["check_id"] == "DRIFT-006" for e in listed.json()["results"])

    page = _page(personas["viewer_alpha"])
    assert "Configuration drift" in page and "gpu-ts-1" in page
    assert ONLY_BETA not in page
    assert ONLY_BETA in _page(personas["security_lead"])


def test_a_change_of_hidden_names_is_told_not_read_as_no_field_differing(drift_world, personas):
    viewer = api_client(personas["viewer_alpha"]).get("/api/v1/drift-events/?check=DRIFT-003")
    events = {e["summary"]: e for e in viewer.json()["results"]}
    taint = events["taint of gpu-ts-1"]
    assert taint["hidden_changes"] == 1  # the taint's value; "pool" did not change
    assert "beta" not in json.dumps(taint) and "gamma" not in json.dumps(taint)
    labels = events["labels or taints of GPU node gpu-ts-1 changed"]
    assert labels["hidden_changes"] == 0  # "(another tenant)" -> "x" reads as the change
    lead = api_client(personas["security_lead"]).get("/api/v1/drift-events/?check=DRIFT-003")
    assert all(e["hidden_changes"] == 0 for e in lead.json()["results"])

    page = _page(personas["viewer_alpha"])
    assert "no field differs" not in page, page[page.find("Configuration drift") :]
    assert "1 value naming another tenant changed (hidden)" in page
    assert "naming another tenant changed" not in _page(personas["security_lead"])


def test_the_clusters_api_counts_the_gpu_nodes_the_viewer_may_see(drift_world, personas):
    def gpu_nodes(user) -> int:
        body = api_client(user).get("/api/v1/clusters/").json()
        return next(c for c in body["results"] if c["name"] == "lab")["inventory_coverage"][
            "gpu_nodes"
        ]

    assert gpu_nodes(personas["security_lead"]) == 2
    assert gpu_nodes(personas["viewer_alpha"]) == 1
    assert gpu_nodes(personas["viewer_beta"]) == 2
    one = api_client(personas["viewer_alpha"]).get("/api/v1/clusters/lab/").json()
    assert one["inventory_coverage"]["gpu_nodes"] == 1
