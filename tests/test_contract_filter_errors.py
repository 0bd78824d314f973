"""DESIGN §8: a filter naming an object that does not exist, or a value outside a closed set,
is a 400 naming the parameter, the value and what is accepted; never an empty list that reads
as "alpha has no findings". DESIGN §10: an object the user may not see is refused in exactly
the words of one that does not exist (no existence oracle)."""

from __future__ import annotations

import json
import re

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from inventory.models import Cluster
from providers.models import Provider
from tenants.models import Tenant
from tests.conftest import api_client

pytestmark = pytest.mark.django_db


def refused(client, path: str, param: str) -> str:
    """The one message of a refused filter; the body is the API's validation-error shape."""
    response = client.get(path)
    assert response.status_code == 400, (path, response.status_code, response.content[:300])
    body = response.json()
    assert set(body) == {"detail", "errors"} and list(body["errors"]) == [param], body
    (message,) = body["errors"][param]
    return message


def count(client, path: str) -> int:
    response = client.get(path)
    assert response.status_code == 200, (path, response.content[:300])
    return response.json()["count"]


# (endpoint, parameter, a value naming nothing, a word the refusal offers instead)
NAMED = {
    "findings": [
        ("tenant", "alpah", "alpha"),
        ("cluster", "nosuch", "lab"),
        ("check", "SHARE-01", "SHARE-001"),
        ("action", "0000000000000000", "/api/v1/actions/"),
    ],
    "actions": [("cluster", "nosuch", "lab"), ("tenant", "nosuch", "beta"), ("check", "x", "")],
    "tenants": [("trust_class", "galactic", "external"), ("trust_class__slug", "x", "sensitive")],
    "nodes": [("cluster", "nosuch", "lab")],
    "workloads": [
        ("cluster", "nosuch", "lab"),
        ("tenant", "nosuch", "alpha"),
        ("node", "gpu-ts-9", "gpu-ts-1"),
        ("party", "platfrom", "platform"),
    ],
    "sync-runs": [("cluster", "nosuch", "lab")],
    "drift-events": [("cluster", "nosuch", "lab"), ("check", "DRIFT-004", "DRIFT-001")],
    "gpus": [("cluster", "nosuch", "lab"), ("node", "gpu-ts-9", "gpu-ts-1")],
    "utilisation": [("cluster", "nosuch", "lab")],
    "sharing-requests": [("tenant", "nosuch", "alpha"), ("cluster", "nosuch", "lab")],
    "reset-attestations": [("tenant", "nosuch", "alpha"), ("cluster", "nosuch", "lab")],
}
CLOSED = {
    "findings": [("severity", "dire", "critical"), ("status", "gone", "accepted")],
    "nodes": [
        ("patch_status", "old", "below_baseline"),
        ("sharing_strategy", "sometimes", "time_slicing"),
        ("gpu", "maybe", "true"),
    ],
    "workloads": [("phase", "running", "Running")],
    "sync-runs": [("status", "ok", "succeeded")],
    "drift-events": [("kind", "labels", "node")],
    "gpus": [("sharing_strategy", "sometimes", "mig")],
    "utilisation": [("days", "5", "90")],
    "sharing-requests": [("mode", "fractional", "time_slicing"), ("state", "live", "active")],
    "reset-attestations": [("method", "wipe", "gpu_reset")],
    "bulletins": [("component", "kernel", "driver")],
    "assessments": [("status", "done", "submitted")],
}
ROWS = [(e, *row) for table in (NAMED, CLOSED) for e, rows in table.items() for row in rows]


@pytest.mark.parametrize(("endpoint", "param", "value", "offered"), ROWS)
def test_a_filter_naming_nothing_is_a_400_naming_param_value_and_what_is_accepted(
    small_world, personas, endpoint, param, value, offered
):
    client = api_client(personas["security_lead"])
    message = refused(client, f"/api/v1/{endpoint}/?{param}={value}", param)
    assert repr(value.upper() if param == "check" else value) in message
    assert offered in message


def test_findings_filters_still_take_names_ids_any_case_and_empty_means_none(small_world, personas):
    client = api_client(personas["security_lead"])
    alpha = Tenant.objects.get(slug="alpha")
    everything = count(client, "/api/v1/findings/")
    by_slug = count(client, "/api/v1/findings/?tenant=alpha")
    assert 0 < by_slug < everything
    assert count(client, f"/api/v1/findings/?tenant={alpha.pk}") == by_slug
    assert count(client, "/api/v1/findings/?tenant=Team Alpha") == by_slug
    assert count(client, "/api/v1/findings/?tenant=&cluster=&check=") == everything
    assert count(client, "/api/v1/findings/?check=share-001") == 1
    # A real tenant with no findings is an honest empty list, not an error.
    Tenant.objects.create(slug="gamma", name="Gamma", trust_class=alpha.trust_class)
    assert count(client, "/api/v1/findings/?tenant=gamma") == 0


def test_tenants_take_the_trust_class_in_both_spellings(small_world, personas):
    client = api_client(personas["security_lead"])
    external = count(client, "/api/v1/tenants/?trust_class=external")
    assert external == count(client, "/api/v1/tenants/?trust_class__slug=external") == 1
    assert count(client, "/api/v1/tenants/?trust_class=") == 2


def test_inventory_filters_take_names_and_ids(small_world, personas):
    client = api_client(personas["security_lead"])
    assert count(client, f"/api/v1/nodes/?cluster={small_world.pk}&gpu=true") == 1
    for spelling in ("True", "1", "yes"):  # a boolean as clients write it
        assert count(client, f"/api/v1/nodes/?cluster={small_world.pk}&gpu={spelling}") == 1
    assert count(client, "/api/v1/workloads/?node=gpu-ts-1&party=alpha") > 0
    assert count(client, "/api/v1/workloads/?phase=Running") > 0
    assert count(client, "/api/v1/drift-events/?check=drift-001") == 0  # known, none yet


def test_assessments_filter_by_provider_slug_or_name(small_world, personas):
    Provider.objects.create(slug="acme", name="Acme Cloud")
    client = api_client(personas["procurement"])
    assert count(client, "/api/v1/assessments/?provider=acme") == 0
    assert count(client, "/api/v1/assessments/?provider=Acme Cloud") == 0
    message = refused(client, "/api/v1/assessments/?provider=acmee", "provider")
    assert "Did you mean 'acme'?" in message


@pytest.mark.parametrize(
    ("path", "param"),
    [
        ("/api/v1/findings/?gpu_model=A100", None),
        ("/api/v1/nodes/?gpu_model=A100", None),
        ("/api/v1/bulletins/?severity=Important", None),
        ("/api/v1/reset-attestations/?node=gone-node-7", None),
        ("/api/v1/audit-events/?actor=departed", None),
        ("/api/v1/workloads/?namespace=no-such-ns", None),
    ],
)
def test_free_values_stay_free(small_world, personas, path, param):
    """Free text is not a name of ours: a GPU model substring, a vendor's severity word, what
    an attestation or the audit log recorded (it outlives the node or user), a namespace."""
    assert api_client(personas["security_lead"]).get(path).status_code == 200


# --- no existence oracle ----------------------------------------------------------------------

# viewer_alpha may not see beta, nor a cluster where alpha runs nothing.
HIDDEN_AND_ABSENT = [
    ("findings", "tenant", "beta", "zeta"),
    ("actions", "tenant", "beta", "zeta"),
    ("workloads", "tenant", "beta", "zeta"),
    ("workloads", "party", "beta", "zeta"),
    ("sharing-requests", "tenant", "beta", "zeta"),
    ("reset-attestations", "tenant", "beta", "zeta"),
    ("findings", "cluster", "hidden-east", "absent-east"),
    ("nodes", "cluster", "hidden-east", "absent-east"),
    ("utilisation", "cluster", "hidden-east", "absent-east"),
]


@pytest.mark.parametrize(("endpoint", "param", "hidden", "absent"), HIDDEN_AND_ABSENT)
def test_a_viewer_naming_what_they_may_not_see_gets_the_answer_for_what_does_not_exist(
    small_world, personas, endpoint, param, hidden, absent
):
    Cluster.objects.create(name="hidden-east")
    viewer = api_client(personas["viewer_alpha"])
    said = refused(viewer, f"/api/v1/{endpoint}/?{param}={hidden}", param)
    assert said == refused(viewer, f"/api/v1/{endpoint}/?{param}={absent}", param).replace(
        absent, hidden
    )
    assert "beta" not in said.replace("'beta'", "") and "Beta" not in said


def test_a_viewer_naming_a_hidden_tenant_by_id_or_name_is_told_it_does_not_exist(
    small_world, personas
):
    beta = Tenant.objects.get(slug="beta")
    viewer = api_client(personas["viewer_alpha"])
    for asked in (str(beta.pk), "Beta Corp", "999999"):
        assert refused(viewer, f"/api/v1/findings/?tenant={asked}", "tenant") == (
            f"no tenant {asked!r} that you may see; give a tenant's slug, name or id. "
            "Accepted: alpha."
        )


def test_the_findings_page_says_why_it_lists_nothing_in_the_same_words(small_world, personas):
    page = Client()
    page.force_login(personas["viewer_alpha"])
    hidden = page.get("/findings/?tenant=beta").content.decode()
    absent = page.get("/findings/?tenant=zeta").content.decode()
    assert "no tenant &#x27;beta&#x27; that you may see" in hidden
    assert "No findings match" in hidden
    assert unmasked(hidden.replace("beta", "zeta")) == unmasked(absent)


def unmasked(html: str) -> str:
    return re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"', "", html)  # masked anew each time


# --- the CLI ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--tenant", "alpah"], ["--tenant: no tenant 'alpah'", "Did you mean 'alpha'?"]),
        (["--cluster", "nosuch"], ["--cluster: no cluster 'nosuch'", "Accepted: lab."]),
    ],
)
def test_export_findings_refuses_an_unknown_tenant_or_cluster(small_world, args, words):
    with pytest.raises(CommandError) as refusal:
        call_command("export_findings", *args)
    assert all(word in str(refusal.value) for word in words)
    assert "that you may see" not in str(refusal.value)  # the command sees everything


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/nodes/?cluster=%25s%25d",
        "/api/v1/findings/export/?tenant=100%25",
        "/api/v1/findings/?check=%25(value)s",
        "/api/v1/nodes/?patch_status=%25s",
    ],
)
def test_a_percent_sign_in_a_refused_value_is_a_400_not_a_500(small_world, personas, url):
    """Found by the API fuzzer: a refusal quoting a value with "%" was read as a format."""
    response = api_client(personas["security_lead"]).get(url)
    assert response.status_code == 400
    body = json.dumps(response.json())
    assert "%" in body and "%%" not in body
