"""A tenant viewer never reads another tenant's DRA ResourceClaim name. Alpha and beta
time-slice one H100 through their own claims; scored, alpha's viewer reads the co-tenancy
findings on every surface (finding page, findings API, every export format, the node page):
beta's claim, namespace and pod are named nowhere, alpha's own claim is, with its namespace.
A security lead reads both claims.

The claim name carries no tenant name on purpose ("rag-ts-gpu"): only its namespace says whose
it is, so the evidence must name it with its namespace for tenants.redaction to hide it."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from tests.conftest import api_client, content
from tests.posture.dra_world import claim, device_class, dra_pod, resource_slice
from tests.posture.gpu_access_world import namespace, node

pytestmark = pytest.mark.django_db

OWN_CLAIM = "resourceclaim/team-alpha/train-gpu"
OWN_BASIS = "ResourceClaim team-alpha/train-gpu: gpu.nvidia.com gpu-a/gpu-0"
THEIR_CLAIM = "resourceclaim/rag-serve/rag-ts-gpu"
# Whatever the surface spells around them, none of beta's names may stand in a viewer's answer.
THEIR_NAMES = ("rag-ts-gpu", "rag-serve", "rag-dra-0")
EXPORTS = ("json", "csv", "sarif", "openreports", "policyreport")


@pytest.fixture
def dra_world(personas, tmp_path):
    """Alpha (internal) and beta (external), each on gpu-0 of node gpu-a through its own
    time-sliced DRA claim; synced as cluster "lab" and scored."""
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
                "namespaces": ["team-alpha"],
                "viewers": ["viewer-alpha"],
            },
            {
                "slug": "beta",
                "name": "Beta Corp",
                "trust_class": "external",
                "namespaces": ["rag-serve"],
                "viewers": ["viewer-beta"],
            },
        ]
    }
    tenants_apply(specs=parse_tenants_document(document))
    items = [
        namespace("team-alpha"),
        namespace("rag-serve"),
        node("gpu-a", gpus=4),
        device_class(),
        resource_slice("gpu-a"),
        claim(
            "team-alpha", "train-gpu", ["gpu-0"], sharing="TimeSlicing", reserved_for=["train-0"]
        ),
        claim(
            "rag-serve", "rag-ts-gpu", ["gpu-0"], sharing="TimeSlicing", reserved_for=["rag-dra-0"]
        ),
        dra_pod("team-alpha", "train-0", "train-gpu"),
        dra_pod("rag-serve", "rag-dra-0", "rag-ts-gpu"),
    ]
    path = tmp_path / "lab.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    cluster = cluster_get_or_create(name="lab")
    cluster_sync_from_snapshot(cluster=cluster, paths=[path])
    posture_evaluate()
    return cluster


def _shared_findings(cluster) -> list:
    """The co-tenancy findings about both tenants' claims (the world's point: there are some)."""
    from posture.models import Finding

    found = [
        f
        for f in Finding.objects.filter(cluster=cluster, status="open").order_by("check_id")
        if {"alpha", "beta"} <= set(f.tenants.values_list("slug", flat=True))
        and "rag-ts-gpu" in json.dumps(f.evidence)
    ]
    assert {"SHARE-001", "SHARE-003"} <= {f.check_id for f in found}, found
    return found


def _read(user, cluster) -> dict[str, str]:
    """URL -> the raw text `user` gets there: each shared finding's page and API detail, the
    findings list (page and API), every export format, the node page, the tenant's page, the
    home page and the actions the findings group into."""
    page = Client()
    page.force_login(user)
    api = api_client(user)
    urls = {f"/findings/{f.pk}/": page for f in _shared_findings(cluster)}
    urls |= {f"/api/v1/findings/{f.pk}/": api for f in _shared_findings(cluster)}
    urls |= {
        "/findings/?tenant=alpha": page,
        "/api/v1/findings/?tenant=alpha": api,
        "/nodes/lab/gpu-a/": page,
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


def test_a_tenant_viewer_reads_their_own_claim_and_never_the_other_tenants(dra_world, personas):
    answers = _read(personas["viewer_alpha"], dra_world)
    for url, text in answers.items():
        for name in THEIR_NAMES:
            assert name not in text.lower(), f"{url} names {name}"
    # Their own claim stays named, with its namespace, wherever the evidence is shown in full
    # (policy reports and lists carry results, not evidence).
    findings = _shared_findings(dra_world)
    full = [url for f in findings for url in (f"/findings/{f.pk}/", f"/api/v1/findings/{f.pk}/")]
    full += [f"/api/v1/findings/export/?format={kind}" for kind in ("json", "csv", "sarif")]
    for url in full:
        assert OWN_CLAIM in answers[url] and OWN_BASIS in answers[url], url
    # What stands for theirs says it is another tenant's, not nothing.
    finding = findings[0]
    assert "resourceclaim/(another tenant&#x27;s object)" in answers[f"/findings/{finding.pk}/"]
    detail = answers[f"/api/v1/findings/{finding.pk}/"]
    assert "ResourceClaim (another tenant's object): gpu.nvidia.com" in detail
    # The node page lists the claims holding its devices: theirs hidden, alpha's as it is.
    assert "team-alpha/train-gpu" in answers["/nodes/lab/gpu-a/"]


def test_a_security_lead_reads_both_claims(dra_world, personas):
    answers = _read(personas["security_lead"], dra_world)
    for url in ("/api/v1/findings/export/?format=csv", "/api/v1/findings/export/?format=sarif"):
        assert OWN_CLAIM in answers[url] and THEIR_CLAIM in answers[url], url
    finding = _shared_findings(dra_world)[0]
    detail = answers[f"/api/v1/findings/{finding.pk}/"]
    assert OWN_BASIS in detail and "ResourceClaim rag-serve/rag-ts-gpu: gpu.nvidia.com" in detail
    assert "rag-serve/rag-ts-gpu" in answers["/nodes/lab/gpu-a/"]
