"""A privileged pod's finding reaches the tenant beside it on its node (posture.rules.pod.
neighbours): alpha's privileged slurmd runs on gpu-8 beside beta's training pod. Scored, beta's
viewer finds alpha's POD-001 in the findings API, on its page and on beta's tenant page, and
its risk counts it, with alpha's names hidden as a co-tenancy finding's are; alpha's viewer
reads its own finding with beta's names hidden; a security lead reads both."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from tests.conftest import api_client, content
from tests.posture.gpu_access_world import container, namespace, node, pod

pytestmark = pytest.mark.django_db

ALPHA_IMAGE = "registry.alpha-hpc.example/slurm/slurmd:24.05"
# The container's name is alpha's choice too, and says what it runs.
ALPHA_NAMES = ("hpc-slurm", "slurmd-0", "Team Alpha", "alpha-hpc", "slurmd-gpu-probe")
BETA_NAMES = ("vision-lab", "vit-train-0", "Beta Corp")


@pytest.fixture
def slurm_world(personas, tmp_path):
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
                "namespaces": ["hpc-slurm"],
                "viewers": ["viewer-alpha"],
            },
            {
                "slug": "beta",
                "name": "Beta Corp",
                "trust_class": "sensitive",
                "namespaces": ["vision-lab"],
                "viewers": ["viewer-beta"],
            },
        ]
    }
    tenants_apply(specs=parse_tenants_document(document))
    gpus = {"nvidia.com/gpu": 4}
    items = [
        namespace("hpc-slurm"),
        namespace("vision-lab"),
        node("gpu-8", gpus=8, capacity={"nvidia.com/gpu": "8"}),
        pod(
            "hpc-slurm",
            "slurmd-0",
            container(
                "slurmd-gpu-probe",
                image=ALPHA_IMAGE,
                gpu=gpus,
                securityContext={"privileged": True},
            ),
            node_name="gpu-8",
        ),
        pod("vision-lab", "vit-train-0", container(gpu=gpus), node_name="gpu-8"),
    ]
    path = tmp_path / "lab.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    cluster = cluster_get_or_create(name="lab")
    cluster_sync_from_snapshot(cluster=cluster, paths=[path])
    posture_evaluate()
    return cluster


def _privileged(cluster):
    from posture.models import Finding

    (finding,) = Finding.objects.filter(cluster=cluster, check_id="POD-001", status="open")
    return finding


def _read(user, finding, tenant: str) -> dict[str, str]:
    page = Client()
    page.force_login(user)
    api = api_client(user)
    urls = {
        f"/findings/{finding.pk}/": page,
        f"/api/v1/findings/{finding.pk}/": api,
        f"/api/v1/findings/?tenant={tenant}": api,
        f"/tenants/{tenant}/": page,
    }
    answers = {}
    for url, client in urls.items():
        response = client.get(url)
        assert response.status_code == 200, url
        answers[url] = content(response).decode()
    return answers


def test_the_finding_affects_the_neighbour_and_its_owner_stays_the_one_to_fix_it(slurm_world):
    from posture.models import TenantScore

    finding = _privileged(slurm_world)
    assert set(finding.tenants.values_list("slug", flat=True)) == {"alpha", "beta"}
    assert (finding.subject_namespace, finding.subject_name) == ("hpc-slurm", "slurmd-0")
    assert finding.evidence["tenant"] == "alpha"
    assert finding.evidence["neighbours"] == {"beta": {"nodes": ["gpu-8"], "node_count": 1}}
    # Beta's risk counts it, at beta's (sensitive) class weight.
    score = TenantScore.objects.filter(tenant__slug="beta").latest("id")
    assert finding.pk in {c["finding_id"] for c in score.contributions}


def test_the_neighbours_viewer_sees_it_with_the_owners_names_hidden(slurm_world, personas):
    finding = _privileged(slurm_world)
    answers = _read(personas["viewer_beta"], finding, "beta")
    for url, text in answers.items():
        for name in ALPHA_NAMES:
            assert name not in text, f"{url} names {name}"
    listed = json.loads(answers["/api/v1/findings/?tenant=beta"])["results"]
    (row,) = [r for r in listed if r["id"] == finding.pk]
    assert row["tenants"] == ["beta"]
    assert row["subject_namespace"] == "(another tenant's namespace)"
    assert row["subject_name"] == "(another tenant's object)"
    detail = json.loads(answers[f"/api/v1/findings/{finding.pk}/"])
    assert detail["evidence"]["tenant"] == "(another tenant)"
    # The owner's image names its registry: hidden in a record of another tenant's.
    (entry,) = detail["evidence"]["containers"]
    assert entry["image"] == "(another tenant's object)" and entry["field"].endswith("privileged")
    assert entry["container"] == "(another tenant's object)"
    assert detail["title"].startswith("Container (another tenant's object) of Pod")
    assert detail["evidence"]["neighbours"] == {"beta": {"nodes": ["gpu-8"], "node_count": 1}}
    assert f"/findings/{finding.pk}/" in answers["/tenants/beta/"]


def test_the_owners_viewer_never_reads_the_neighbours_names(slurm_world, personas):
    finding = _privileged(slurm_world)
    answers = _read(personas["viewer_alpha"], finding, "alpha")
    for url, text in answers.items():
        for name in BETA_NAMES:
            assert name not in text, f"{url} names {name}"
        assert '"beta"' not in text, url
    detail = json.loads(answers[f"/api/v1/findings/{finding.pk}/"])
    assert detail["tenants"] == ["alpha"]
    assert detail["evidence"]["neighbours"] == {
        "(another tenant)": {"nodes": ["gpu-8"], "node_count": 1}
    }


def test_a_security_lead_reads_owner_and_neighbour(slurm_world, personas):
    finding = _privileged(slurm_world)
    detail = api_client(personas["security_lead"]).get(f"/api/v1/findings/{finding.pk}/").json()
    assert detail["tenants"] == ["alpha", "beta"]
    assert detail["subject_name"] == "slurmd-0"
    assert set(detail["evidence"]["neighbours"]) == {"beta"}
    assert detail["evidence"]["containers"][0]["image"] == ALPHA_IMAGE
