"""The MIG partitioner's page and API: placement on the memory-slice grid, clear refusals,
trust-class warnings for tenants sharing a GPU, and errors in the answer rather than 500s."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.conftest import api_client

pytestmark = pytest.mark.django_db


def validate(user, body):  # type: ignore[no-untyped-def]
    return api_client(user).post("/api/v1/mig/validate/", body, format="json")


def test_the_api_places_instances_on_their_allowed_starts(personas):
    body = {"gpu_model": "NVIDIA-H100-80GB-HBM3", "instances": [
        {"profile": "1g.10gb", "start": 0}, {"profile": "3g.40gb"}, {"profile": "2g.20gb"},
    ]}  # fmt: skip
    answer = validate(personas["platform_engineer"], body)
    assert answer.status_code == 200
    data = answer.json()
    assert data["valid"] and data["errors"] == []
    starts = {(p["profile"], p["start"], p["size"]) for p in data["placements"]}
    assert starts == {("1g.10gb", 0, 1), ("3g.40gb", 4, 4), ("2g.20gb", 2, 2)}


def test_what_does_not_fit_is_an_error_in_the_answer(personas):
    lead = personas["security_lead"]
    bad_start = {"gpu_model": "H100-80GB", "instances": [{"profile": "3g.40gb", "start": 2}]}
    answer = validate(lead, bad_start).json()
    assert not answer["valid"] and "0 or 4" in " ".join(answer["errors"])
    unknown = validate(lead, {"gpu_model": "NVIDIA-GeForce-RTX-4090", "instances": []}).json()
    assert not unknown["valid"] and unknown["errors"]
    too_many = {"gpu_model": "A100-40GB", "instances": [{"profile": "3g.20gb"}] * 3}
    assert not validate(lead, too_many).json()["valid"]
    garbage = validate(lead, {"gpu_model": "H100-80GB", "instances": "x"})
    assert garbage.status_code == 400
    assert api_client(None).post("/api/v1/mig/validate/", {}, format="json").status_code in (
        401,
        403,
    )


def test_tenants_whose_class_forbids_mig_sharing_are_warned(small_world, personas):
    from tenants.models import Tenant

    body = {"gpu_model": "H100-80GB", "instances": [
        {"profile": "3g.40gb", "tenant": "alpha"}, {"profile": "3g.40gb", "tenant": "beta"},
    ]}  # fmt: skip
    assert validate(personas["platform_engineer"], body).json()["warnings"] == []
    beta_class = Tenant.objects.get(slug="beta").trust_class
    beta_class.allowed_modes = ["exclusive"]  # whole GPUs only
    beta_class.save()
    data = validate(personas["platform_engineer"], body).json()
    assert data["valid"]  # it fits; the warning is about who shares it
    assert len(data["warnings"]) == 1 and data["warnings"][0].startswith("tenants beta and alpha")


def test_the_page_draws_the_grid_and_the_mig_parted_snippet(personas):
    client = Client()
    client.force_login(personas["auditor"])
    page = client.get(
        "/mig/", {"gpu_model": "H100-80GB", "instances": "3g.40gb @4 alpha\n2g.20gb\n1g.10gb"}
    ).content.decode()
    assert "It fits" in page and "slice 7" in page and "mig-configs" in page
    refused = client.get("/mig/", {"gpu_model": "H100-80GB", "instances": "7g.80gb\n1g.10gb"})
    assert "It does not fit" in refused.content.decode()
    empty = client.get("/mig/").content.decode()
    assert "GPU model" in empty and "It fits" not in empty
