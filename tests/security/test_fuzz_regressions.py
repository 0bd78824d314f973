"""What the API fuzzer (bench/fuzz.py, schemathesis) found, each pinned: a response that broke
the OpenAPI schema the API publishes (a client generated from /api/schema/ would reject it).

Each test fetches a real response and validates it with schemathesis against the schema that
drf-spectacular generates for the running code, as the fuzzer's
`response_schema_conformance` check does."""

from __future__ import annotations

import json
from functools import cache

import pytest
import requests
import schemathesis
from django.core.management import call_command
from django.utils import timezone
from drf_spectacular.generators import SchemaGenerator
from schemathesis.core.transport import Response

from inventory.models import Pod
from posture.models import Finding
from providers.assessments import assessment_start
from providers.models import Provider
from sharing.services import sharing_request_create
from tenants.models import Tenant
from tests.conftest import api_client, content

pytestmark = pytest.mark.django_db


@cache
def _schema():
    return schemathesis.openapi.from_dict(SchemaGenerator().get_schema(request=None, public=True))


def assert_conforms(response, method: str, template: str, path: str) -> None:
    """The response matches what the schema documents for `method template` (raises with
    schemathesis' explanation otherwise)."""
    body = content(response)
    if response.streaming:  # read once: keep the body for the caller
        response.streaming_content = [body]
    assert response.status_code == 200, body[:500]
    checked = Response(
        status_code=response.status_code,
        headers={k.lower(): [v] for k, v in response.headers.items()},
        content=body,
        request=requests.Request(method, f"http://testserver{path}").prepare(),
        elapsed=0.0,
        verify=False,
    )
    _schema()[template][method].validate_response(checked)


def get_conforming(user, template: str, path: str):
    response = api_client(user).get(path)
    assert_conforms(response, "GET", template, path)
    return response


def test_a_cluster_wide_finding_has_no_tenants_in_the_schema(small_world, personas):
    now = timezone.now()
    finding = Finding.objects.create(
        check_id="K8S-002",
        severity="high",
        cluster=small_world,
        subject_kind="Node",
        subject_name="gpu-ts-1",
        fingerprint="fuzz-regression",
        title="GPU node gpu-ts-1 has no taint that separates tenant classes",
        first_seen=now,
        last_seen=now,
    )
    lead = personas["security_lead"]
    rows = get_conforming(lead, "/api/v1/findings/", "/api/v1/findings/").json()["results"]
    assert any(row["tenants"] == [] for row in rows)
    get_conforming(lead, "/api/v1/findings/{id}/", f"/api/v1/findings/{finding.pk}/")


def test_a_platform_pod_and_a_pending_pod_have_null_tenant_and_node(small_world, personas):
    platform = Pod.objects.filter(tenant__isnull=True).first()
    assert platform is not None
    Pod.objects.filter(pk=platform.pk).update(node=None, phase="Pending")
    lead = personas["security_lead"]
    rows = get_conforming(lead, "/api/v1/workloads/", "/api/v1/workloads/?page_size=500")
    assert any(r["tenant"] is None and r["node"] is None for r in rows.json()["results"])
    get_conforming(lead, "/api/v1/workloads/{id}/", f"/api/v1/workloads/{platform.pk}/")


def test_a_pending_request_for_the_whole_cluster_conforms(small_world, personas):
    request = sharing_request_create(
        tenant=Tenant.objects.get(slug="alpha"),
        cluster=small_world,
        mode="mig_gi",
        justification="Inference replicas fit in one GPU instance each.",
        user=personas["viewer_alpha"],
    )
    lead = personas["security_lead"]
    shown = get_conforming(
        lead, "/api/v1/sharing-requests/{id}/", f"/api/v1/sharing-requests/{request.pk}/"
    ).json()
    assert shown["node_pool"] == "" and shown["decided_by"] is None and shown["revoked_by"] is None
    get_conforming(lead, "/api/v1/sharing-requests/", "/api/v1/sharing-requests/")


def test_asking_for_the_whole_cluster_with_an_empty_node_pool_is_accepted(small_world, personas):
    # The response shows "" for the whole cluster; a client sending that value back is not
    # refused ("This field may not be blank").
    response = api_client(personas["viewer_alpha"]).post(
        "/api/v1/sharing-requests/",
        {
            "tenant": "alpha",
            "cluster": small_world.name,
            "mode": "mig_gi",
            "node_pool": "",
            "justification": "Inference replicas fit in one GPU instance each.",
        },
        format="json",
    )
    assert response.status_code == 201, response.json()
    assert response.json()["node_pool"] == ""


def test_a_new_assessment_with_no_responder_yet_conforms(small_world, personas):
    call_command("load_questionnaires", verbosity=0)
    provider = Provider.objects.create(slug="nimbus", name="Nimbus GPU Cloud")
    assessment = assessment_start(provider=provider, user=personas["procurement"])
    lead = personas["security_lead"]
    shown = get_conforming(
        lead, "/api/v1/assessments/{id}/", f"/api/v1/assessments/{assessment.pk}/"
    ).json()
    assert shown["responder_email"] == "" and shown["submitted_by"] is None
    assert shown["reviewed_by"] is None
    get_conforming(lead, "/api/v1/assessments/", "/api/v1/assessments/")


def test_the_cluster_checklist_is_a_plain_list_of_ten(small_world, personas):
    path = f"/api/v1/clusters/{small_world.name}/checklist/"
    items = get_conforming(
        personas["security_lead"], "/api/v1/clusters/{name}/checklist/", path
    ).json()
    assert isinstance(items, list) and len(items) == 10


def test_the_json_findings_export_is_a_list_of_findings(small_world, personas):
    lead = personas["security_lead"]
    path = "/api/v1/findings/export/?format=json"
    rows = json.loads(content(get_conforming(lead, "/api/v1/findings/export/", path)))
    assert isinstance(rows, list) and rows and {"id", "check", "tenants"} <= set(rows[0])
    csv = get_conforming(lead, "/api/v1/findings/export/", "/api/v1/findings/export/?format=csv")
    assert csv["Content-Type"].startswith("text/csv")
