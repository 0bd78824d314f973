"""A tenant viewer reads the sync runs of their clusters (API and the cluster page) with no
other party's names in them (docs/access.md), warnings and error alike (rtself6 k36, k58, k75,
k86). The redaction hides an object by its namespace, so every message names one as
`namespace/name` (inventory.sources.object_refs), and a NUL's place never names a map key
someone chose (inventory.sources.nul_places).

Cluster `mix`: vega (viewer-alpha's tenant) trains on gpu-a; orbit's pod in its labelled
namespace and an unclaimed notebook carry a NUL in an annotation whose key names them; an
unclaimed namespace runs NVIDIA's device plugin beside a web app (refused as the GPU stack's,
said on the run); a later export holds orbit's pod with a NUL in its name (refused)."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client

from tests.conftest import api_client
from tests.posture.gpu_access_world import container, namespace, node, pod

pytestmark = pytest.mark.django_db

PLUGIN = "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"
GPU = {"nvidia.com/gpu": "1"}
# Every name of another party, and the annotation keys those parties chose.
THEIRS = (
    "orbit",
    "shared-batch",
    "orbit-trainer",
    "nb-scratch",
    "scratch-nb-0",
    "nb.example",
    "plug-mixed",
    "webapp",
)


def _owned(made: dict, kind: str, name: str) -> dict:
    made["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": kind, "name": name, "controller": True}
    ]
    return made


def _controller(kind: str, ns: str, name: str, image: str) -> dict:
    spec = {"containers": [container("main", image)]}
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": ns},
        "spec": {"selector": {"matchLabels": {"app": name}}, "template": {"spec": spec}},
    }


def _items(trainer: str = "orbit-trainer-0") -> list[dict]:
    gpu = container(gpu=GPU)
    return [
        node("gpu-a"),
        namespace("vega-ml"),
        namespace("shared-batch", **{"gpuposture.io/tenant": "orbit"}),
        namespace("nb-scratch"),
        namespace("plug-mixed"),
        pod("vega-ml", "vega-infer-0", gpu),
        pod("shared-batch", trainer, gpu, annotations={"orbit.example/run": "r\x00"}),
        pod("nb-scratch", "scratch-nb-0", gpu, annotations={"nb.example/owner": "\x00"}),
        # NVIDIA's plugin beside a web app: not the GPU stack's alone (stack_alone).
        _controller("DaemonSet", "plug-mixed", "device-plugin", PLUGIN),
        _controller("Deployment", "plug-mixed", "webapp", "docker.io/library/nginx:1.27"),
        _owned(
            pod("plug-mixed", "webapp-5d8f7-abcde", container("web", "nginx:1.27")),
            "ReplicaSet",
            "webapp-5d8f7",
        ),
    ]


def _write(tmp_path, name: str, items: list[dict]):
    path = tmp_path / name
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return path


@pytest.fixture
def mix(personas, tmp_path):
    from inventory.services import cluster_sync_from_snapshot
    from inventory.sync import cluster_get_or_create
    from tenants.services import tenants_apply
    from tenants.spec import parse_tenants_document

    document = {
        "tenants": [
            {
                "slug": "vega",
                "name": "Vega Analytics",
                "trust_class": "internal",
                "namespaces": ["vega-ml"],
                "viewers": ["viewer-alpha"],
            },
            {"slug": "orbit", "name": "Orbit Systems", "trust_class": "internal"},
        ]
    }
    tenants_apply(specs=parse_tenants_document(document))
    cluster = cluster_get_or_create(name="mix")
    cluster_sync_from_snapshot(cluster=cluster, paths=[_write(tmp_path, "mix.json", _items())])
    return cluster


def _runs(user) -> list[dict]:
    response = api_client(user).get("/api/v1/sync-runs/?cluster=mix")
    assert response.status_code == 200
    return response.json()["results"]


def _named(text: str) -> list[str]:
    return [name for name in THEIRS if re.search(re.escape(name), text, re.IGNORECASE)]


def test_a_viewer_reads_the_runs_warnings_without_another_partys_names(mix, personas):
    viewer = personas["viewer_alpha"]
    (run,) = _runs(viewer)
    text = json.dumps(run)
    assert _named(text) == []
    (nul,) = [w for w in run["warnings"] if "NUL" in w]
    # Where, in words a viewer may read: the kind, the field, how many keys; not whose.
    assert nul.startswith("2 strings read held a NUL byte")
    assert nul.count("Pod (another tenant's object) metadata.annotations (one key)") == 2
    (refused,) = [w for w in run["warnings"] if "holds more than the GPU stack" in w]
    assert "Deployment (another tenant's object) (runs docker.io/library/nginx:1.27" in refused
    assert "pod (another tenant's object) (of ReplicaSet (another tenant's object))" in refused
    # The sentence still reads: no "(another tenant)" where a word of it was.
    assert "judged as those of a namespace no tenant claims" in refused
    assert "(another tenant) namespace's" not in text
    page = Client()
    page.force_login(viewer)
    response = page.get("/clusters/mix/")
    assert response.status_code == 200
    assert _named(response.content.decode()) == []


def test_a_security_lead_reads_where_each_was(mix, personas):
    (run,) = _runs(personas["security_lead"])
    (nul,) = [w for w in run["warnings"] if "NUL" in w]
    assert "Pod shared-batch/orbit-trainer-0 metadata.annotations (one key)" in nul
    assert "Pod nb-scratch/scratch-nb-0 metadata.annotations (one key)" in nul
    assert "orbit.example" not in nul and "nb.example" not in nul  # keys: no one's to read
    (refused,) = [w for w in run["warnings"] if "holds more than the GPU stack" in w]
    assert "Deployment plug-mixed/webapp (runs" in refused
    assert "pod plug-mixed/webapp-5d8f7-abcde (of ReplicaSet plug-mixed/webapp-5d8f7)" in refused


def test_a_refused_snapshot_names_the_bad_pod_by_its_namespace(mix, personas, tmp_path):
    from inventory.services import cluster_sync_from_snapshot
    from inventory.sync import SyncError

    bad = _write(tmp_path, "bad.json", _items(trainer="orbit-trainer\x00-0"))
    with pytest.raises(SyncError):
        cluster_sync_from_snapshot(cluster=mix, paths=[bad])
    failed = [r for r in _runs(personas["security_lead"]) if r["status"] == "failed"]
    assert (
        "(a Pod in namespace shared-batch) metadata.name is not a valid name"
        in (failed[0]["error"])
    )
    viewer = personas["viewer_alpha"]
    (seen,) = [r for r in _runs(viewer) if r["status"] == "failed"]
    assert "(a Pod in namespace (another tenant's namespace)) metadata.name" in seen["error"]
    assert _named(json.dumps(_runs(viewer))) == []
    page = Client()
    page.force_login(viewer)
    assert _named(page.get("/clusters/mix/").content.decode()) == []
