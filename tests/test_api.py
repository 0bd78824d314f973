"""The REST API contract of DESIGN §8: shapes, filters by slug or name, posture, docs."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from rest_framework.test import APIClient

from accounts.services import token_create
from posture.models import Finding
from posture.scoring import score_for, shown_score
from tests.conftest import api_client

pytestmark = pytest.mark.django_db


def test_finding_shape_and_filters_by_slug_and_name(small_world, personas):
    client = api_client(personas["security_lead"])
    rows = client.get("/api/v1/findings/?tenant=beta&check=POD-001&status=open").json()["results"]
    assert len(rows) == 1
    finding = rows[0]
    assert set(finding) >= {
        "id",
        "check",
        "severity",
        "status",
        "tenants",
        "cluster",
        "subject_kind",
        "subject_namespace",
        "subject_name",
        "title",
        "evidence",
        "first_seen",
        "last_seen",
        "mappings",
    }
    # beta's privileged pod runs on the node alpha's pods share: a way onto that node affects
    # alpha too (POD-001's neighbours).
    assert finding["tenants"] == ["alpha", "beta"] and finding["cluster"] == "lab"
    assert finding["evidence"]["tenant"] == "beta" and set(finding["evidence"]["neighbours"]) == {
        "alpha"
    }
    assert finding["subject_name"] == "inference-0"
    assert "ATT&CK:T1611" in finding["mappings"]
    critical = client.get("/api/v1/findings/?severity=critical&cluster=lab").json()["results"]
    assert {f["check"] for f in critical} == {"POD-001", "SHARE-001"}
    nowhere = client.get("/api/v1/findings/?cluster=nowhere")
    assert nowhere.status_code == 400 and "nowhere" in nowhere.json()["errors"]["cluster"][0]


def test_bad_filter_value_is_a_json_error(small_world, personas):
    response = api_client(personas["security_lead"]).get("/api/v1/findings/?severity=dire")
    assert response.status_code == 400
    assert "severity" in response.json()["errors"]


def test_tenant_posture_adds_up(small_world, personas):
    client = api_client(personas["security_lead"])
    tenant = next(
        t for t in client.get("/api/v1/tenants/").json()["results"] if t["slug"] == "alpha"
    )
    assert tenant["trust_class"] == "internal" and tenant["namespaces"] == ["team-alpha"]
    posture = client.get(f"/api/v1/tenants/{tenant['id']}/posture/").json()
    assert posture["risk"] == round(sum(c["points"] for c in posture["contributions"]), 2)
    assert posture["risk"] > 0 and 0 < posture["score"] < 100
    assert posture["score"] == shown_score(score_for(posture["risk"]))
    assert posture["grade"] == "F"
    # The list gives the same risk and score as the tenant's posture.
    assert (tenant["risk"], tenant["score"], tenant["grade"]) == (
        posture["risk"],
        posture["score"],
        posture["grade"],
    )
    assert {f["check"] for f in posture["findings"]} >= {"SHARE-001", "SHARE-003", "K8S-002"}


def test_nodes_filter_by_cluster_name(small_world, personas):
    client = api_client(personas["platform_engineer"])
    nodes = client.get("/api/v1/nodes/?cluster=lab&gpu=true").json()["results"]
    assert [n["name"] for n in nodes] == ["gpu-ts-1"]
    node = nodes[0]
    assert node["gpu_count"] == 1 and node["sharing_strategy"] == "time_slicing"
    assert node["driver_version"] == "550.90.07" and node["patch_status"] == "unknown"
    assert client.get("/api/v1/nodes/?cluster=other").status_code == 400


def test_token_authentication(small_world, personas):
    _token, key = token_create(user=personas["auditor"], name="ci", scope="read")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    assert client.get("/api/v1/findings/").status_code == 200
    client.credentials(HTTP_AUTHORIZATION="Token not-a-real-token")
    assert client.get("/api/v1/findings/").status_code == 401


def test_tenant_viewer_sees_the_peer_class_but_not_the_peer(small_world, personas):
    client = api_client(personas["viewer_alpha"])
    rows = client.get("/api/v1/findings/?check=SHARE-001").json()["results"]
    assert len(rows) == 1
    text = str(rows[0])
    assert "beta" not in text and "inference-0" not in text
    assert "another tenant" in text and "external" not in rows[0]["title"]
    lead = api_client(personas["security_lead"]).get(
        "/api/v1/findings/?check=SHARE-001&tenant=alpha"
    )
    assert "beta" in str(lead.json()["results"][0]["evidence"])


def test_openapi_schema_and_local_swagger_ui(personas):
    client = Client()
    client.force_login(personas["auditor"])
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert schema.status_code == 200
    text = schema.content.decode()
    for path in ("/api/v1/findings/", "/api/v1/tenants/{id}/posture/", "/api/v1/nodes/"):
        assert path in text
    docs = client.get("/api/docs/").content.decode()
    sources = re.findall(r'(?:src|href)="([^"]+)"', docs)
    assert sources and all(not s.startswith(("http://", "https://", "//")) for s in sources)
    assert any("swagger-ui" in s for s in sources)


def test_findings_stay_unique_per_fingerprint(small_world):
    fingerprints = list(Finding.objects.values_list("fingerprint", flat=True))
    assert len(fingerprints) == len(set(fingerprints))
