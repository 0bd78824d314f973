"""Tenants (PATCH, PUT) and trust classes (PATCH) are editable through the API (DESIGN §3
"seed data, editable", §6 weights "editable with the trust classes", §9 the tenants file's
shape): validated as POST and apply_tenants are, an audit event per change (§10), a re-score,
the security lead's alone, and the slug (the stable id) never changes."""

from __future__ import annotations

import pytest

from audit.models import AuditEvent
from posture.models import PostureRun
from tenants.models import Tenant, TrustClass
from tests.conftest import api_client

pytestmark = pytest.mark.django_db

TENANTS = "/api/v1/tenants/"
CLASSES = "/api/v1/trust-classes/"


@pytest.fixture
def committed(django_capture_on_commit_callbacks):
    """Run a change as a request would: its on-commit work (the re-score) runs at the end."""
    return lambda: django_capture_on_commit_callbacks(execute=True)


def events(object_type: str) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(object_type=object_type).order_by("id"))


def alpha() -> Tenant:
    return Tenant.objects.get(slug="alpha")


# --- tenants ----------------------------------------------------------------------------------


def test_patch_changes_the_fields_given_audits_and_rescores(small_world, personas, committed):
    lead = api_client(personas["security_lead"])
    before, runs = len(events("tenants.tenant")), PostureRun.objects.count()
    with committed():
        answer = lead.patch(
            f"{TENANTS}{alpha().pk}/", {"name": "Alpha Research", "trust_class": "external"}
        )
    assert answer.status_code == 200, answer.content
    assert (answer.json()["name"], answer.json()["trust_class"]) == ("Alpha Research", "external")
    assert answer.json()["namespaces"] == ["team-alpha"]  # not given: kept
    assert answer.json()["principals"] == ["group:alpha-devs"]
    assert list(alpha().viewers.values_list("username", flat=True)) == ["viewer-alpha"]
    (event,) = events("tenants.tenant")[before:]
    assert event.actor_name == "sec" and event.before["trust_class"] == "internal"
    assert event.after["trust_class"] == "external" and event.after["name"] == "Alpha Research"
    assert PostureRun.objects.count() == runs + 1


def test_patch_namespaces_principals_and_viewers_as_the_file_does(small_world, personas):
    lead = api_client(personas["security_lead"])
    body = {
        "namespaces": ["team-alpha", "alpha-batch"],
        "principals": ["user:ana@example.com"],
        "viewers": ["viewer-alpha", "aud"],
    }
    answer = lead.patch(f"{TENANTS}{alpha().pk}/", body, format="json")
    assert answer.status_code == 200, answer.content
    assert sorted(answer.json()["namespaces"]) == ["alpha-batch", "team-alpha"]
    assert answer.json()["principals"] == ["user:ana@example.com"]
    assert sorted(alpha().viewers.values_list("username", flat=True)) == ["aud", "viewer-alpha"]
    created = events("tenants.tenantnamespace")[-1]
    assert created.action == "create"
    assert created.after == {"name": "alpha-batch", "tenant": "alpha"}


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"trust_class": "nope"}, "unknown trust class 'nope'"),
        ({"namespaces": ["Not_A_Namespace"]}, "is not a Kubernetes namespace name"),
        ({"principals": ["team-x"]}, "must be 'group:NAME' or 'user:NAME'"),
        ({"name": ""}, "name: required"),
        ({"colour": "red"}, "unknown field(s) colour"),
        ({"namespaces": []} | {"slug": "alpha2"}, "stable id"),
    ],
)
def test_patch_is_validated_as_post_is(small_world, personas, body, words):
    lead = api_client(personas["security_lead"])
    before = AuditEvent.objects.count()
    refused = lead.patch(f"{TENANTS}{alpha().pk}/", body, format="json")
    assert refused.status_code == 400 and words in refused.json()["detail"], refused.content
    assert alpha().name == "Team Alpha" and AuditEvent.objects.count() == before


def test_a_namespace_of_another_tenant_is_refused(small_world, personas):
    beta = Tenant.objects.get(slug="beta")
    body = {"namespaces": ["team-alpha"]}
    lead = api_client(personas["security_lead"])
    refused = lead.patch(f"{TENANTS}{beta.pk}/", body, format="json")
    assert refused.status_code == 400
    assert "already belongs to tenant 'alpha'" in refused.json()["detail"]


def test_put_replaces_the_whole_entry_and_takes_a_get_back(small_world, personas):
    lead = api_client(personas["security_lead"])
    url = f"{TENANTS}{alpha().pk}/"
    viewers = sorted(alpha().viewers.values_list("username", flat=True))
    assert viewers, "the world gives alpha a viewer"
    read = lead.get(url).json()
    assert read["viewers"] == viewers
    answer = lead.put(url, {**read, "name": "Alpha", "principals": []}, format="json")
    assert answer.status_code == 200, answer.content
    assert (answer.json()["name"], answer.json()["principals"]) == ("Alpha", [])
    assert answer.json()["namespaces"] == ["team-alpha"]
    # What the GET answered comes back whole: the viewers stay.
    assert sorted(alpha().viewers.values_list("username", flat=True)) == viewers
    # Left out of a PUT: emptied, as a POST of the same entry would.
    without = {k: v for k, v in read.items() if k != "viewers"}
    assert lead.put(url, without, format="json").status_code == 200
    assert not alpha().viewers.exists()
    incomplete = lead.put(url, {"name": "Alpha"}, format="json")
    assert incomplete.status_code == 400 and "trust_class: required" in str(incomplete.json())


def test_a_tenant_viewer_is_not_told_who_else_reads_the_tenant(small_world, personas):
    url = f"{TENANTS}{alpha().pk}/"
    assert "viewers" in api_client(personas["auditor"]).get(url).json()
    own = api_client(personas["viewer_alpha"]).get(url)
    assert own.status_code == 200 and "viewers" not in own.json()


def test_only_the_security_lead_updates_a_tenant(small_world, personas):
    url = f"{TENANTS}{alpha().pk}/"
    for persona in ("platform_engineer", "procurement", "auditor", "viewer_alpha"):
        for method in ("patch", "put"):
            refused = getattr(api_client(personas[persona]), method)(url, {"name": "x"})
            assert refused.status_code == 403, (persona, method)
            assert "security_lead" in refused.json()["detail"]
    assert alpha().name == "Team Alpha"
    assert api_client(personas["security_lead"]).delete(url).status_code == 405


# --- trust classes ----------------------------------------------------------------------------


def test_patch_a_trust_class_audits_and_rescores(small_world, personas, committed):
    lead = api_client(personas["security_lead"])
    runs = PostureRun.objects.count()
    body = {
        "risk_weight": 3.5,
        "description": "Other internal teams, reviewed.",
        "allowed_modes": ["exclusive", "mig_gi"],
        "approval_expiry_days": 30,
        "pool_taints": ["dedicated=internal:NoSchedule"],
    }
    with committed():
        answer = lead.patch(f"{CLASSES}internal/", body, format="json")
    assert answer.status_code == 200, answer.content
    assert answer.json()["risk_weight"] == 3.5 and answer.json()["allowed_modes"] == [
        "exclusive",
        "mig_gi",
    ]
    internal = TrustClass.objects.get(slug="internal")
    assert (internal.approval_expiry_days, internal.pool_taints) == (
        30,
        ["dedicated=internal:NoSchedule"],
    )
    (event,) = events("tenants.trustclass")
    assert event.actor_name == "sec" and event.action == "update"
    assert (event.before["risk_weight"], event.after["risk_weight"]) == (2.0, 3.5)
    assert PostureRun.objects.count() == runs + 1
    # Unchanged: no event, no re-score.
    with committed():
        assert lead.patch(f"{CLASSES}internal/", {"risk_weight": 3.5}).status_code == 200
    assert len(events("tenants.trustclass")) == 1 and PostureRun.objects.count() == runs + 1


def test_a_trust_class_is_reached_by_id_too(small_world, personas):
    internal = TrustClass.objects.get(slug="internal")
    lead = api_client(personas["security_lead"])
    assert lead.get(f"{CLASSES}{internal.pk}/").json()["slug"] == "internal"
    answer = lead.patch(f"{CLASSES}{internal.pk}/", {"name": "Internal teams"})
    assert answer.status_code == 200 and answer.json()["name"] == "Internal teams"


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"slug": "inside"}, "slug", "stable id"),
        ({"allowed_modes": ["warp"]}, "allowed_modes", "not a valid choice"),
        ({"risk_weight": 0}, "risk_weight", "greater than or equal to 0.1"),
        ({"pool_taints": ["dedicated=x"]}, "pool_taints", "NoSchedule"),
        ({"same_class_only_modes": ["mps"]}, "same_class_only_modes", "must also be allowed"),
    ],
)
def test_patch_a_trust_class_is_validated(small_world, personas, body, field, words):
    before = AuditEvent.objects.count()
    refused = api_client(personas["security_lead"]).patch(
        f"{CLASSES}internal/", body, format="json"
    )
    assert refused.status_code == 400, refused.content
    assert words in str(refused.json()["errors"][field])
    assert TrustClass.objects.get(slug="internal").risk_weight == 2.0
    assert AuditEvent.objects.count() == before


def test_only_the_security_lead_edits_a_trust_class(small_world, personas):
    url = f"{CLASSES}internal/"
    for persona in ("platform_engineer", "procurement", "auditor", "viewer_alpha"):
        refused = api_client(personas[persona]).patch(url, {"risk_weight": 9})
        assert refused.status_code == 403, persona
    lead = api_client(personas["security_lead"])
    assert lead.put(url, {"risk_weight": 9}).status_code == 405
    assert lead.delete(url).status_code == 405
    assert TrustClass.objects.get(slug="internal").risk_weight == 2.0


def test_a_get_put_back_keeps_a_viewer_whose_account_does_not_exist_yet(
    small_world, personas, tmp_path
):
    lead = api_client(personas["security_lead"])
    url = f"{TENANTS}{alpha().pk}/"
    read = lead.get(url).json()
    declared = lead.patch(url, {"viewers": [*read["viewers"], "not-yet"]}, format="json")
    assert declared.status_code == 200, declared.content
    read = lead.get(url).json()
    assert "not-yet" in read["viewers"]
    assert lead.put(url, read, format="json").status_code == 200
    assert "not-yet" in lead.get(url).json()["viewers"]
