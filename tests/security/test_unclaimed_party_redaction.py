"""A tenant viewer never reads the names of the unclassified party (namespaces no tenant
claims, DESIGN §3): it is another party, hidden as another tenant's namespace and objects are
(docs/access.md). Alpha holds an AMD MI300X GPU on mi300-a beside a notebook in a namespace
nobody claims and ext's privileged pod: LEAK-002 names all three parties. Alpha's viewer reads
it on every surface (finding page and API, the findings list, every export, the node page)
without the unclaimed namespace or its pod; the platform's own namespace (kube-system) is not
hidden, and a security lead reads everything."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from tests.conftest import api_client, content
from tests.posture.gpu_access_world import container, namespace, pod

pytestmark = pytest.mark.django_db

UNCLAIMED_NS, UNCLAIMED_POD = "sandbox-qz", "nb-qz-0"
EXPORTS = ("json", "csv", "sarif", "openreports", "policyreport")
ROCM = "rocm/pytorch:rocm6.2"


def _mi300() -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": "mi300-a",
            "labels": {
                "kubernetes.io/hostname": "mi300-a",
                "amd.com/gpu.product-name": "AMD_Instinct_MI300X_OAM",
            },
        },
        "spec": {},
        "status": {"capacity": {"cpu": "64", "amd.com/gpu": "8"}, "allocatable": {}},
    }


@pytest.fixture
def unclaimed_world(personas, tmp_path):
    from inventory.services import cluster_sync_from_snapshot
    from inventory.sync import cluster_get_or_create
    from posture.services import posture_evaluate
    from tenants.services import tenants_apply
    from tenants.spec import parse_tenants_document

    document = {
        "tenants": [
            {
                "slug": "alpha",
                "name": "Team Alpha",
                "trust_class": "internal",
                "namespaces": ["alpha"],
                "viewers": ["viewer-alpha"],
            },
            {"slug": "ext", "name": "Ext Co", "trust_class": "external", "namespaces": ["ext"]},
        ]
    }
    tenants_apply(specs=parse_tenants_document(document))
    amd = {"amd.com/gpu": "1"}
    items = [
        _mi300(),
        namespace("alpha"),
        namespace("ext"),
        namespace(UNCLAIMED_NS),
        namespace("kube-system"),
        pod("alpha", "train-0", container(gpu=amd, image=ROCM), node_name="mi300-a"),
        pod(UNCLAIMED_NS, UNCLAIMED_POD, container(gpu=amd, image=ROCM), node_name="mi300-a"),
        pod(
            "ext",
            "debug-0",
            container(image=ROCM, securityContext={"privileged": True}),
            node_name="mi300-a",
        ),
        pod(
            "kube-system",
            "rocm-plugin-qz",
            container(image="rocm/k8s-device-plugin:1.31.0.6"),
            node_name="mi300-a",
        ),
    ]
    path = tmp_path / "mix.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    cluster = cluster_get_or_create(name="mix")
    cluster_sync_from_snapshot(cluster=cluster, paths=[path])
    posture_evaluate()
    return cluster


def _leak(cluster):
    from posture.models import Finding

    found = Finding.objects.get(cluster=cluster, check_id="LEAK-002", status="open")
    slugs = set(found.tenants.values_list("slug", flat=True))
    assert slugs == {"alpha", "ext", "unclassified"}, slugs
    assert f"{UNCLAIMED_NS}/{UNCLAIMED_POD}" in json.dumps(found.evidence)
    return found


def _read(user, cluster) -> dict[str, str]:
    page = Client()
    page.force_login(user)
    api = api_client(user)
    leak = _leak(cluster)
    urls = {
        f"/findings/{leak.pk}/": page,
        f"/api/v1/findings/{leak.pk}/": api,
        "/findings/?tenant=alpha": page,
        "/api/v1/findings/?check=LEAK-002": api,
        "/nodes/mix/mi300-a/": page,
        "/nodes/?cluster=mix": page,
        "/api/v1/nodes/?cluster=mix": api,
        "/api/v1/workloads/?cluster=mix": api,
        "/tenants/alpha/": page,
        "/home/": page,
        "/api/v1/actions/": api,
    }
    urls |= {f"/api/v1/findings/export/?format={kind}": api for kind in EXPORTS}
    answers = {}
    for url, client in urls.items():
        response = client.get(url)
        assert response.status_code == 200, url
        answers[url] = content(response).decode()
    return answers


def test_a_tenant_viewer_reads_no_name_of_the_unclassified_party(unclaimed_world, personas):
    answers = _read(personas["viewer_alpha"], unclaimed_world)
    for url, text in answers.items():
        for name in (UNCLAIMED_NS, UNCLAIMED_POD):
            assert name not in text, f"{url} names {name}"
    detail = json.loads(answers[f"/api/v1/findings/{_leak(unclaimed_world).pk}/"])
    assert detail["tenants"] == ["alpha"]
    rows = [(r["tenant"], r["reaches_gpus_by"]) for r in detail["evidence"]["tenants_on_node"]]
    # Each other party is there, unnamed: the viewer learns the GPU is shared, not with whom.
    other = "(another tenant)"
    assert sorted(rows) == [
        (other, "pod (another tenant's object) holds amd.com/gpu=1"),
        (other, "pod (another tenant's object) reaches every GPU: privileged container main"),
        ("alpha", "pod alpha/train-0 holds amd.com/gpu=1"),
    ]


def test_the_platform_namespace_stays_named_and_a_lead_reads_every_party(unclaimed_world, personas):
    from inventory.presenter import hidden_scope_for

    scope = hidden_scope_for(personas["viewer_alpha"])
    assert UNCLAIMED_NS in scope.namespaces
    assert "kube-system" not in scope.namespaces and "alpha" not in scope.namespaces
    # Those who read every tenant read the unclassified party as stored.
    assert hidden_scope_for(personas["security_lead"]) is None
    lead = api_client(personas["security_lead"])
    detail = lead.get(f"/api/v1/findings/{_leak(unclaimed_world).pk}/").json()
    assert f"pod {UNCLAIMED_NS}/{UNCLAIMED_POD} holds amd.com/gpu=1" in json.dumps(detail)
    assert "unclassified" in detail["tenants"]
