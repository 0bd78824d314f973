"""A GPU node tainted for two trust classes is no class's pool: K8S-002 says so, naming the
conflicting taints, as POD-009 already reads it (DESIGN §3: both read one rule), and the
checklist's item 8 (pools tainted) fails on it."""

from __future__ import annotations

import json

import pytest

from tests.conftest import api_client
from tests.posture.builders import tenant
from tests.posture.gpu_access_world import container, namespace, node, pod, run, world

VAULT = tenant("vault", "sensitive")
TWO_CLASSES = [
    {"key": "gpuposture.io/trust-class", "value": "sensitive", "effect": "NoSchedule"},
    {"key": "gpuposture.io/trust-class", "value": "external", "effect": "NoSchedule"},
]


def _two_class_node(name: str = "gpu-a") -> dict:
    found = node(name, capacity={"nvidia.com/gpu": "8"})
    found["spec"]["taints"] = list(TWO_CLASSES)
    return found


def test_k8s002_names_the_two_classes_taints():
    objects = [
        _two_class_node(),
        namespace("vault"),
        pod("vault", "train-0", container(gpu={"nvidia.com/gpu": "1"})),
    ]
    (draft,) = run("K8S-002", world(objects, (VAULT,)))
    assert draft.subject_name == "gpu-a"
    assert draft.tenants == ("vault",)
    assert draft.evidence["tainted_for_classes"] == ["external", "sensitive"]
    assert sorted(draft.evidence["conflicting_class_taints"]) == [
        "gpuposture.io/trust-class=external:NoSchedule",
        "gpuposture.io/trust-class=sensitive:NoSchedule",
    ]
    assert "external and sensitive" in draft.title
    assert "gpuposture.io/trust-class=sensitive:NoSchedule" in draft.title
    # POD-009 reads the node alike: vault's pod is outside a sensitive pool.
    assert [d.tenants for d in run("POD-009", world(objects, (VAULT,)))] == [("vault",)]


def test_one_class_taint_keeps_k8s002_quiet():
    one = _two_class_node()
    one["spec"]["taints"] = TWO_CLASSES[:1]
    objects = [one, namespace("vault"), pod("vault", "t", container(gpu={"nvidia.com/gpu": "1"}))]
    assert run("K8S-002", world(objects, (VAULT,))) == []


@pytest.mark.django_db
def test_checklist_item_8_fails_on_a_two_class_node(personas, tmp_path):
    from inventory.services import cluster_sync_from_snapshot
    from inventory.sync import cluster_get_or_create
    from posture.models import Finding
    from posture.services import posture_evaluate
    from tenants.services import tenants_apply
    from tenants.spec import parse_tenants_document
    from tests.conftest import load_json

    tenants_apply(specs=parse_tenants_document(load_json("small-tenants.json")))
    path = tmp_path / "two.json"
    path.write_text(json.dumps({"kind": "List", "items": [_two_class_node()]}))
    cluster = cluster_get_or_create(name="two")
    cluster_sync_from_snapshot(cluster=cluster, paths=[str(path)])
    posture_evaluate()
    (found,) = Finding.objects.filter(cluster=cluster, check_id="K8S-002", status="open")
    assert found.subject_name == "gpu-a"
    rows = api_client(personas["security_lead"]).get("/api/v1/clusters/two/checklist/").json()
    assert rows[7]["status"] == "fail"
    assert "K8S-002" in rows[7]["evidence"]["open_findings"]
