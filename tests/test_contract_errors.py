"""DESIGN §8: errors are JSON with a message a person can act on, on every API path."""

from __future__ import annotations

import json

import pytest
from django.test import Client, RequestFactory

from posture.models import Finding
from tests.conftest import api_client

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "path", ["/api/v1/gpu-thing/", "/api/v1/tenants/1/nothing/", "/api/nothing"]
)
def test_an_unknown_api_path_is_a_json_404(personas, path):
    for client in (api_client(personas["auditor"]), Client()):
        response = client.get(path)
        assert response.status_code == 404
        assert response["Content-Type"].startswith("application/json")
        assert "/api/v1/" in response.json()["detail"]


def test_a_page_path_keeps_its_html_404(personas):
    client = Client()
    client.force_login(personas["auditor"])
    response = client.get("/no-such-page/")
    assert response.status_code == 404 and response["Content-Type"].startswith("text/html")


def test_a_path_without_its_slash_still_redirects(personas):
    response = api_client(personas["auditor"]).get("/api/v1/findings")
    assert response.status_code == 301 and response["Location"].endswith("/api/v1/findings/")


def test_a_server_error_under_the_api_is_json():
    from django.utils.module_loading import import_string

    from gpuposture.urls import handler500

    server_error = import_string(handler500)
    request = RequestFactory().get("/api/v1/findings/")
    request.request_id = "abc123"
    response = server_error(request)
    assert response.status_code == 500 and response["Content-Type"] == "application/json"
    assert "abc123" in json.loads(response.content)["detail"]
    page = server_error(RequestFactory().get("/findings/"))
    assert page.status_code == 500 and b"<html" in page.content


def test_a_role_without_the_write_role_is_told_which_role_it_needs(small_world, personas):
    finding = Finding.objects.filter(status="open").first()
    response = api_client(personas["auditor"]).post(
        f"/api/v1/findings/{finding.id}/accept/",
        {"reason": "an auditor tries", "until": "2030-01-01T00:00:00Z"},
    )
    assert response.status_code == 403
    detail = response.json()["detail"]
    assert "auditor" in detail and "security_lead" in detail
    assert "ask an administrator" not in detail


def test_a_method_the_resource_lacks_is_405_not_a_role_refusal(small_world, personas):
    finding = Finding.objects.first()
    response = api_client(personas["auditor"]).delete(f"/api/v1/findings/{finding.id}/")
    assert response.status_code == 405 and "DELETE" in response.json()["detail"]


def test_a_user_without_a_role_is_still_refused(small_world, personas):
    finding = Finding.objects.first()
    response = api_client(personas["no_role"]).delete(f"/api/v1/findings/{finding.id}/")
    assert response.status_code == 403 and "role" in response.json()["detail"]


@pytest.mark.parametrize("verb", ["approve", "deny", "revoke"])
def test_deciding_an_unknown_sharing_request_is_a_404(personas, verb):
    client = api_client(personas["platform_engineer"])
    response = client.post(f"/api/v1/sharing-requests/999999/{verb}/", {}, format="json")
    assert response.status_code == 404 and response.json()["detail"]


def test_reviewing_an_unknown_assessment_is_a_404(personas):
    client = api_client(personas["security_lead"])
    response = client.post("/api/v1/assessments/999999/review/", {}, format="json")
    assert response.status_code == 404 and response.json()["detail"]


@pytest.mark.parametrize("path", ["/api/v1/gpu-thing/", "/api/v1/tenants/1/nothing/"])
def test_an_unknown_api_path_is_a_json_404_under_debug_too(personas, settings, path):
    # The demo runs with DEBUG on: Django's technical 404 page must not answer the API.
    settings.DEBUG = True
    response = api_client(personas["auditor"]).get(path)
    assert response.status_code == 404
    assert response["Content-Type"].startswith("application/json")
    assert "/api/v1/" in response.json()["detail"]
    redirect = api_client(personas["auditor"]).get("/api/v1/findings")
    assert redirect.status_code == 301
    page = Client()
    page.force_login(personas["auditor"])
    html = page.get("/no-such-page/")
    assert html.status_code == 404 and html["Content-Type"].startswith("text/html")
