"""`?sharing_strategy=` agrees with the rows it lists (API and the nodes page alike): a node of
other vendors' GPUs alone shows its sharing as null / "not read" (inventory.serializers), so
`none` ("unshared, whole GPUs") never lists it; `not_read` lists exactly those. The mixed
cluster of tests/posture/test_mixed_vendor_accelerators, synced."""

from __future__ import annotations

import pytest

from tests.conftest import api_client
from tests.inventory.test_other_vendor_nodes import OTHER, mixed, page  # noqa: F401

pytestmark = pytest.mark.django_db
NODES = ("h100-a", "cpu-a", *OTHER)


@pytest.mark.parametrize(
    "value, expected",
    [
        ("none", {"h100-a", "cpu-a"}),  # cpu-a's stored and shown "none": no GPU to share
        ("not_read", set(OTHER)),
        ("time_slicing", set()),
        ("unknown", set()),  # STACK-007's unreadable config, not another vendor's node
    ],
)
def test_the_sharing_filter_lists_what_the_rows_say(mixed, personas, value, expected):  # noqa: F811
    lead = api_client(personas["security_lead"])
    rows = lead.get(f"/api/v1/nodes/?cluster=mixed&sharing_strategy={value}").json()["results"]
    assert {r["name"] for r in rows} == expected
    if value == "none":
        assert {r["sharing_strategy"] for r in rows} == {"none"}
    if value == "not_read":
        assert {r["sharing_strategy"] for r in rows} == {None}
    text = page(personas["platform_engineer"], f"/nodes/?cluster=mixed&sharing_strategy={value}")
    assert {n for n in NODES if f">{n}</a>" in text} == expected


def test_an_unknown_sharing_value_is_still_refused(mixed):  # noqa: F811
    from django.contrib.auth.models import User

    lead = api_client(User.objects.create_superuser("root-x", password="x-not-used-12"))
    response = lead.get("/api/v1/nodes/?sharing_strategy=sometimes")
    assert response.status_code == 400
    assert "not_read" in str(response.json())
