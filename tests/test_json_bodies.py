"""Deeply nested JSON sent to any endpoint gets a 400 with a message, never a 500 (issue 16
item 12); a bulletin file nested as deep is refused on the upload page with the reason. Bodies
up to the documented 20 MiB reach the parser; larger ones get a JSON 400 saying so."""

from __future__ import annotations

import re

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from gpuposture.base import roles
from gpuposture.base.api import body_too_big_message
from gpuposture.base.parsers import MAX_BODY_BYTES
from inventory.models import Bulletin
from tests.conftest import api_client, make_user
from tests.security.urlwalk import WRITE_METHODS, parameter_names, routes

pytestmark = pytest.mark.django_db

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(
    ("path", "persona"),
    [
        ("/api/v1/bulletins/", "security_lead"),
        ("/api/v1/mig/validate/", "platform_engineer"),
        ("/api/v1/sharing-requests/", "platform_engineer"),
    ],
)
def test_a_100000_level_body_is_a_400_with_a_message(small_world, personas, path, persona):
    answer = api_client(personas[persona]).post(path, DEEP, content_type="application/json")
    assert answer.status_code == 400, answer.content[:300]
    assert answer.json() == {
        "detail": "JSON parse error - nested deeper than 64 levels (at character 64)"
    }


def test_no_write_endpoint_answers_a_deep_body_with_a_500(small_world):
    # Every role at once, so the body gets as far as each endpoint lets anyone get.
    everyone = make_user("everyone", *roles.ROLES)
    client = api_client(everyone)
    client.raise_request_exception = False
    checked, refused = 0, 0
    for route in routes():
        if not route.route.startswith("api/") or not route.methods or route.format_suffix:
            continue
        path = "/" + _fill(route.route)
        for method in sorted(route.methods & set(WRITE_METHODS) - {"DELETE"}):
            answer = getattr(client, method.lower())(path, DEEP, content_type="application/json")
            assert answer.status_code < 500, (method, path, answer.status_code)
            checked += 1
            refused += "nested deeper than 64 levels" in answer.content.decode()
    # The sweep reached the API's write endpoints, and most of them read the body.
    assert checked >= 20 and refused >= 15, (checked, refused)


def _fill(route: str) -> str:
    """A concrete path for a route pattern: each parameter becomes 1."""
    path = route.replace("^", "").replace("$", "")
    for name in parameter_names(route):
        path = re.sub(rf"\(\?P<{name}>[^)]*\)|<(?:\w+:)?{name}>", "1", path)
    return path


def test_a_deep_bulletin_file_on_the_upload_page_is_refused_with_the_reason(personas):
    client = Client()
    client.force_login(personas["security_lead"])
    deep = SimpleUploadedFile("deep.json", DEEP.encode(), content_type="application/json")
    page = client.post("/bulletins/import/", {"files": [deep], "urls": ""})
    text = page.content.decode()
    assert page.status_code == 200
    assert "deep.json" in text and "nested deeper than 64 levels" in text
    assert not Bulletin.objects.exists()


def test_a_body_over_django_default_but_under_the_documented_limit_reaches_the_serializer(
    personas,
):
    # 3 MB: over Django's 2.5 MB default, under docs/clusters.md's 20 MiB for API bodies.
    body = {"slug": "delta", "name": "N" * 3_000_000, "trust_class": "internal"}
    answer = api_client(personas["security_lead"]).post("/api/v1/tenants/", body, format="json")
    assert answer.status_code == 400
    # Judged on its fields: the name is too long.
    assert "name: at most 120 characters" in answer.json()["detail"]


def test_a_body_over_the_documented_limit_is_a_json_400_saying_so(personas):
    assert settings.DATA_UPLOAD_MAX_MEMORY_SIZE == MAX_BODY_BYTES
    body = '{"slug": "delta", "name": "' + "N" * MAX_BODY_BYTES + '"}'
    answer = api_client(personas["security_lead"]).post(
        "/api/v1/tenants/", body, content_type="application/json"
    )
    assert answer.status_code == 400
    assert answer["Content-Type"] == "application/json"
    assert answer.json() == {"detail": body_too_big_message()}
    assert "larger than 20 MiB" in answer.json()["detail"]
