"""`GET /api/v1/checks/` is paginated like every other list of DESIGN §8, with a page that
holds the whole catalogue (a client looking for PROV-002 on page 1 finds it)."""

from __future__ import annotations

from posture.rules import CHECKS
from tests.conftest import api_client


def test_the_catalogue_is_one_page_in_the_shape_of_every_list(personas):
    body = api_client(personas["auditor"]).get("/api/v1/checks/").json()
    assert set(body) == {"count", "next", "previous", "results"}
    assert body["count"] == len(CHECKS) and body["next"] is None and body["previous"] is None
    ids = [row["id"] for row in body["results"]]
    assert len(ids) == len(CHECKS) and {"PROV-002", "SHARE-001", "TEN-001"} <= set(ids)


def test_page_size_is_honoured(personas):
    client = api_client(personas["auditor"])
    first = client.get("/api/v1/checks/?page_size=10").json()
    second = client.get(first["next"]).json()
    assert first["count"] == len(CHECKS) and len(first["results"]) == 10
    assert "page=2" in first["next"] and second["previous"]
    assert not {r["id"] for r in first["results"]} & {r["id"] for r in second["results"]}


def test_one_check_and_the_frameworks_stay_as_they_were(personas):
    client = api_client(personas["auditor"])
    assert client.get("/api/v1/checks/prov-002/").json()["id"] == "PROV-002"
    controls = client.get("/api/v1/checks/frameworks/").json()
    assert isinstance(controls, list) and controls[0]["control"]


def test_the_schema_describes_the_page(personas):
    client = api_client(personas["auditor"])
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    ok = schema["paths"]["/api/v1/checks/"]["get"]["responses"]["200"]["content"]
    ref = ok["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
    assert ref == "PaginatedCheckList"
    assert "results" in schema["components"]["schemas"][ref]["properties"]
