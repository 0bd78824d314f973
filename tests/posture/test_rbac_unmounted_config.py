"""K8S-004 on a device-plugin sharing ConfigMap no plugin in the snapshot mounts and no
ClusterPolicy names, outside the platform's namespaces, whose key a GPU node's
`nvidia.com/device-plugin.config` label selects: fail closed, a tenant group that may patch it
is reported (it was not, and checklist item 7 passed), the finding saying why it counts it."""

from __future__ import annotations

import json

import pytest

from inventory.services import cluster_sync_from_snapshot
from inventory.sync import cluster_get_or_create
from posture.models import Finding
from posture.rules.k8s.rbac_gpu_targets import UNMOUNTED
from posture.services import posture_evaluate
from tenants.services import tenants_apply
from tenants.spec import parse_tenants_document
from tests.conftest import api_client, load_json

pytestmark = pytest.mark.django_db

TS4 = (
    "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
    "    - name: nvidia.com/gpu\n      replicas: 4\n"
)


def _world(tmp_path, config_label: str) -> str:
    capacity = {"cpu": "32", "nvidia.com/gpu": "4"}
    labels = {"nvidia.com/gpu.count": "1", "nvidia.com/device-plugin.config": config_label}
    items = [
        {"kind": "Namespace", "metadata": {"name": "team-alpha"}},
        {"kind": "Namespace", "metadata": {"name": "nvidia-device-plugin"}},
        {
            "kind": "Node",
            "metadata": {"name": "gpu-1", "labels": labels},
            "status": {"capacity": capacity, "allocatable": capacity},
        },
        {
            "kind": "ConfigMap",
            "metadata": {
                "name": "nvidia-device-plugin-configs",
                "namespace": "nvidia-device-plugin",
            },
            "data": {"ts-4": TS4},
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "cm-editor", "namespace": "nvidia-device-plugin"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["patch"]}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "alpha-cm", "namespace": "nvidia-device-plugin"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": "cm-editor",
            },
            "subjects": [{"kind": "Group", "name": "alpha-devs"}],
        },
    ]
    path = tmp_path / f"{config_label}.json"
    path.write_text(json.dumps({"kind": "List", "items": items}))
    return str(path)


@pytest.mark.parametrize(("label", "fires"), [("ts-4", True), ("other", False)])
def test_a_tenant_that_may_patch_the_configmap_a_node_selects_is_reported(
    tmp_path, personas, label, fires
):
    tenants_apply(specs=parse_tenants_document(load_json("small-tenants.json")))
    cluster = cluster_get_or_create(name="cm0")
    cluster_sync_from_snapshot(cluster=cluster, paths=[_world(tmp_path, label)])
    posture_evaluate()
    found = list(Finding.objects.filter(cluster=cluster, check_id="K8S-004", status="open"))
    item7 = api_client(personas["security_lead"]).get("/api/v1/clusters/cm0/checklist/").json()[6]
    if not fires:  # no node selects its key: nothing says it is GPU configuration
        assert found == [] and item7["status"] != "fail"
        return
    (finding,) = found
    assert [t.slug for t in finding.tenants.all()] == ["alpha"]
    (reached,) = finding.evidence["objects"]
    assert reached["object"] == "ConfigMap nvidia-device-plugin/nvidia-device-plugin-configs"
    assert reached["why"] == UNMOUNTED
    assert item7["status"] == "fail"
