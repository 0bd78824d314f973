"""Every write path of the audited objects records events: apply_tenants, the admin, risk
acceptance, clusters (API, page, CLI) and the demo."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
import time_machine
import yaml
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from audit.models import AuditEvent
from audit.selectors import audit_chain_verify
from audit.services import audit_record
from inventory.models import Cluster
from posture.models import Finding
from posture.services import posture_evaluate
from providers.models import Provider
from tenants.models import Tenant, TenantNamespace, TenantPrincipal, TrustClass
from tests.conftest import api_client, world_snapshot_path

pytestmark = pytest.mark.django_db

APPLY = "manage.py apply_tenants"


def apply(tmp_path, tenants: list[dict]) -> str:
    path = tmp_path / "tenants.yaml"
    path.write_text(yaml.safe_dump({"tenants": tenants}))
    out = io.StringIO()
    call_command("apply_tenants", str(path), stdout=out)
    return out.getvalue()


def events(**filters: object) -> list[tuple[str, str, str, str]]:
    """(actor, action, object_type, object_repr) in the order they were recorded."""
    rows = AuditEvent.objects.filter(**filters).order_by("id")
    return list(rows.values_list("actor_name", "action", "object_type", "object_repr"))


ALPHA = {
    "slug": "alpha",
    "name": "Team Alpha",
    "trust_class": "internal",
    "namespaces": ["team-alpha"],
    "principals": ["group:alpha-devs"],
    "viewers": ["viewer-alpha"],
}


def test_apply_tenants_records_tenants_and_mappings(tmp_path, personas):
    apply(tmp_path, [ALPHA])
    assert events() == [
        (APPLY, "create", "tenants.tenant", "alpha"),
        (APPLY, "create", "tenants.tenantnamespace", "team-alpha"),
        (APPLY, "create", "tenants.tenantprincipal", "group:alpha-devs"),
    ]
    created = AuditEvent.objects.get(object_type="tenants.tenant")
    assert created.before is None and created.actor is None
    assert created.after == {
        "slug": "alpha",
        "name": "Team Alpha",
        "trust_class": "internal",
        "viewers": ["viewer-alpha"],
    }
    namespace = AuditEvent.objects.get(object_type="tenants.tenantnamespace")
    assert namespace.after == {"name": "team-alpha", "tenant": "alpha"}
    assert namespace.object_id == str(TenantNamespace.objects.get(name="team-alpha").pk)


def test_apply_tenants_again_unchanged_records_nothing(tmp_path, personas):
    apply(tmp_path, [ALPHA])
    count = AuditEvent.objects.count()
    assert "1 unchanged" in apply(tmp_path, [ALPHA])
    assert AuditEvent.objects.count() == count


def test_apply_tenants_records_updates_and_mapping_changes(tmp_path, personas):
    apply(tmp_path, [ALPHA])
    first = AuditEvent.objects.order_by("-id").first().pk
    changed = {
        **ALPHA,
        "trust_class": "external",
        "namespaces": ["alpha-prod"],
        "principals": ["group:alpha-devs", "user:ana@example.com"],
        "viewers": [],
    }
    apply(tmp_path, [changed])
    assert events(pk__gt=first) == [
        (APPLY, "update", "tenants.tenant", "alpha"),
        (APPLY, "delete", "tenants.tenantnamespace", "team-alpha"),
        (APPLY, "create", "tenants.tenantnamespace", "alpha-prod"),
        (APPLY, "create", "tenants.tenantprincipal", "user:ana@example.com"),
    ]
    update = AuditEvent.objects.get(pk__gt=first, action="update")
    assert update.before["trust_class"] == "internal" and update.after["trust_class"] == "external"
    assert update.before["viewers"] == ["viewer-alpha"] and update.after["viewers"] == []
    removed = AuditEvent.objects.get(action="delete")
    assert removed.before == {"name": "team-alpha", "tenant": "alpha"} and removed.after is None


def test_a_namespace_moving_between_tenants_is_a_removal_and_an_addition(tmp_path, personas):
    beta = {"slug": "beta", "name": "Beta", "trust_class": "external"}
    apply(tmp_path, [ALPHA, beta])
    first = AuditEvent.objects.order_by("-id").first().pk
    apply(tmp_path, [{**ALPHA, "namespaces": []}, {**beta, "namespaces": ["team-alpha"]}])
    moves = AuditEvent.objects.filter(pk__gt=first, object_type="tenants.tenantnamespace")
    assert [(e.action, (e.before or e.after)["tenant"]) for e in moves.order_by("id")] == [
        ("delete", "alpha"),
        ("create", "beta"),
    ]


def test_a_principal_taken_from_another_tenant_is_an_update(tmp_path, personas):
    apply(tmp_path, [ALPHA])
    first = AuditEvent.objects.order_by("-id").first().pk
    apply(
        tmp_path,
        [
            {
                "slug": "gamma",
                "name": "G",
                "trust_class": "internal",
                "principals": ["group:alpha-devs"],
            }
        ],
    )
    moved = AuditEvent.objects.get(pk__gt=first, object_type="tenants.tenantprincipal")
    assert moved.action == "update"
    assert (moved.before["tenant"], moved.after["tenant"]) == ("alpha", "gamma")


def test_a_refused_file_records_nothing(tmp_path, personas):
    apply(tmp_path, [ALPHA])
    count = AuditEvent.objects.count()
    with pytest.raises(Exception, match="unknown trust class"):
        apply(
            tmp_path,
            [{**ALPHA, "name": "Renamed"}, {"slug": "x", "name": "x", "trust_class": "nope"}],
        )
    assert AuditEvent.objects.count() == count


@pytest.fixture
def admin_client(db) -> Client:
    User.objects.create_superuser("root", password="not-used-in-tests-1")
    client = Client()
    client.force_login(User.objects.get(username="root"))
    return client


def inline(prefix: str, rows: list[dict], initial: int = 0) -> dict[str, object]:
    data: dict[str, object] = {
        f"{prefix}-TOTAL_FORMS": str(len(rows)),
        f"{prefix}-INITIAL_FORMS": str(initial),
        f"{prefix}-MIN_NUM_FORMS": "0",
        f"{prefix}-MAX_NUM_FORMS": "1000",
    }
    for index, row in enumerate(rows):
        data.update({f"{prefix}-{index}-{key}": value for key, value in row.items()})
    return data


def test_admin_changes_to_tenants_and_mappings_are_events(admin_client, personas):
    internal = TrustClass.objects.get(slug="internal")
    form = {"slug": "gamma", "name": "Gamma", "trust_class": internal.pk}
    response = admin_client.post(
        "/admin/tenants/tenant/add/",
        {
            **form,
            "viewers": [personas["viewer_alpha"].pk],
            **inline("namespaces", [{"name": "team-gamma", "id": "", "tenant": ""}]),
            **inline("principals", [{"kind": "group", "name": "gamma-devs", "id": ""}]),
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    tenant = Tenant.objects.get(slug="gamma")
    assert events() == [
        ("root", "create", "tenants.tenant", "gamma"),
        ("root", "create", "tenants.tenantnamespace", "team-gamma"),
        ("root", "create", "tenants.tenantprincipal", "group:gamma-devs"),
    ]
    assert AuditEvent.objects.get(object_type="tenants.tenant").after["viewers"] == ["viewer-alpha"]
    namespace = tenant.namespaces.get()
    principal = tenant.principals.get()
    first = AuditEvent.objects.order_by("-id").first().pk
    response = admin_client.post(
        f"/admin/tenants/tenant/{tenant.pk}/change/",
        {
            **form,
            "name": "Gamma Team",
            **inline(
                "namespaces",
                [{"name": "team-gamma", "id": namespace.pk, "tenant": tenant.pk, "DELETE": "on"}],
                initial=1,
            ),
            **inline(
                "principals",
                [{"kind": "user", "name": "gamma-devs", "id": principal.pk, "tenant": tenant.pk}],
                initial=1,
            ),
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    assert events(pk__gt=first) == [
        ("root", "update", "tenants.tenant", "gamma"),
        ("root", "delete", "tenants.tenantnamespace", "team-gamma"),
        ("root", "update", "tenants.tenantprincipal", "user:gamma-devs"),
    ]
    update = AuditEvent.objects.get(pk__gt=first, object_type="tenants.tenant")
    assert (update.before["name"], update.after["name"]) == ("Gamma", "Gamma Team")
    assert (update.before["viewers"], update.after["viewers"]) == (["viewer-alpha"], [])
    deleted = AuditEvent.objects.get(pk__gt=first, action="delete")
    assert deleted.object_id == str(namespace.pk) and deleted.after is None
    assert deleted.actor == User.objects.get(username="root")


@pytest.mark.parametrize("slug", ["platform", "unclassified"])
def test_admin_refuses_a_tenant_slug_the_pages_use_as_a_party(admin_client, personas, slug):
    internal = TrustClass.objects.get(slug="internal")
    response = admin_client.post(
        "/admin/tenants/tenant/add/",
        {
            "slug": slug,
            "name": "Looks official",
            "trust_class": internal.pk,
            **inline("namespaces", []),
            **inline("principals", []),
        },
    )
    assert response.status_code == 200  # the form again, with the error
    assert "is reserved" in response.content.decode()
    assert not Tenant.objects.filter(slug=slug, name="Looks official").exists()
    assert events() == []


def test_admin_deleting_a_tenant_records_its_mappings_too(admin_client, tmp_path, personas):
    apply(tmp_path, [ALPHA])
    tenant = Tenant.objects.get(slug="alpha")
    first = AuditEvent.objects.order_by("-id").first().pk
    response = admin_client.post(f"/admin/tenants/tenant/{tenant.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert not Tenant.objects.exists() and not TenantPrincipal.objects.exists()
    assert events(pk__gt=first) == [
        ("root", "delete", "tenants.tenantnamespace", "team-alpha"),
        ("root", "delete", "tenants.tenantprincipal", "group:alpha-devs"),
        ("root", "delete", "tenants.tenant", "alpha"),
    ]
    deleted = AuditEvent.objects.get(pk__gt=first, object_type="tenants.tenant")
    assert deleted.object_id == str(tenant.pk) and deleted.before["slug"] == "alpha"


# Django's admin form for Provider.website warns about Django 6's URL scheme default.
@pytest.mark.filterwarnings("ignore:The default scheme will be changed")
def test_admin_bulk_delete_and_provider_changes_are_events(admin_client):
    response = admin_client.post(
        "/admin/providers/provider/add/",
        {
            "slug": "nimbus",
            "name": "Nimbus",
            "website": "",
            "contact_name": "",
            "contact_email": "",
            "notes": "",
        },
    )
    assert response.status_code == 302
    provider = Provider.objects.get()
    response = admin_client.post(
        "/admin/providers/provider/",
        {"action": "delete_selected", "_selected_action": [provider.pk], "post": "yes"},
    )
    assert response.status_code == 302 and not Provider.objects.exists()
    assert events() == [
        ("root", "create", "providers.provider", "Nimbus"),
        ("root", "delete", "providers.provider", "Nimbus"),
    ]
    assert AuditEvent.objects.first().before["slug"] == "nimbus"


def test_admin_trust_class_change_is_an_event(admin_client):
    internal = TrustClass.objects.get(slug="internal")
    page = admin_client.get(f"/admin/tenants/trustclass/{internal.pk}/change/")
    form = page.context["adminform"].form
    data = {name: form[name].value() for name in form.fields}
    data = {k: ("" if v is None else v) for k, v in data.items() if v is not False}
    data["approved_registries"] = '["registry.example.internal"]'
    response = admin_client.post(f"/admin/tenants/trustclass/{internal.pk}/change/", data)
    assert response.status_code == 302, response.content.decode()[:2000]
    [event] = AuditEvent.objects.all()
    assert (event.action, event.object_type, event.object_repr) == (
        "update",
        "tenants.trustclass",
        "internal",
    )
    assert event.before["approved_registries"] == []
    assert event.after["approved_registries"] == ["registry.example.internal"]


def test_the_audit_log_is_read_only_in_the_admin(admin_client):
    event = audit_record(actor="manage.py test", action="create", object_type="x.y")
    assert admin_client.get("/admin/audit/auditevent/").status_code == 200
    assert admin_client.get(f"/admin/audit/auditevent/{event.pk}/change/").status_code == 200
    assert admin_client.get("/admin/audit/auditevent/add/").status_code == 403
    assert admin_client.post(f"/admin/audit/auditevent/{event.pk}/delete/").status_code == 403
    response = admin_client.post(
        f"/admin/audit/auditevent/{event.pk}/change/", {"action": "forged"}
    )
    assert response.status_code == 403
    assert AuditEvent.objects.get().action == "create"


def accept_body() -> dict[str, str]:
    until = (timezone.now() + timedelta(days=30)).isoformat()
    return {"reason": "vendor driver debug, removed by next sprint", "until": until}


def test_risk_acceptance_and_reopening_are_events(small_world, personas):
    finding = Finding.objects.filter(tenants__slug="beta", status="open").first()
    lead = api_client(personas["security_lead"])
    assert lead.post(f"/api/v1/findings/{finding.pk}/accept/", accept_body()).status_code == 200
    assert lead.post(f"/api/v1/findings/{finding.pk}/reopen/").status_code == 200
    accept, reopen = AuditEvent.objects.filter(object_type="posture.finding").order_by("id")
    assert (accept.actor_name, accept.action, accept.object_id) == (
        "sec",
        "accept",
        str(finding.pk),
    )
    assert accept.before["status"] == "open" and accept.after["status"] == "accepted"
    assert accept.after["accepted_reason"].startswith("vendor driver debug")
    assert accept.after["accepted_by"] == "sec" and "beta" in accept.after["tenants"]
    assert accept.after["accepted_until"]
    assert (reopen.actor_name, reopen.action) == ("sec", "reopen")
    assert reopen.before["status"] == "accepted" and reopen.after["status"] == "open"
    # Reopening what is not accepted changes nothing and records nothing.
    lead.post(f"/api/v1/findings/{finding.pk}/reopen/")
    assert AuditEvent.objects.filter(object_type="posture.finding").count() == 2


def test_an_expired_acceptance_is_an_event_by_the_system(small_world, personas):
    finding = Finding.objects.filter(tenants__slug="beta", status="open").first()
    api_client(personas["security_lead"]).post(
        f"/api/v1/findings/{finding.pk}/accept/", accept_body()
    )
    posture_evaluate()
    assert not AuditEvent.objects.filter(action="expire").exists()
    with time_machine.travel(timezone.now() + timedelta(days=31), tick=False):
        posture_evaluate()
    expired = AuditEvent.objects.get(action="expire")
    assert expired.actor_name == "system" and expired.object_id == str(finding.pk)
    assert (expired.before["status"], expired.after["status"]) == ("accepted", "open")


def test_clusters_registered_and_edited_through_the_api_are_events(personas, tmp_path, settings):
    settings.GPUPOSTURE_SNAPSHOT_DIR = tmp_path
    (tmp_path / "east.json").write_text('{"kind": "List", "items": []}')
    client = api_client(personas["platform_engineer"])
    response = client.post(
        "/api/v1/clusters/",
        {"name": "east", "source": "snapshot", "snapshot_paths": ["east.json"]},
        format="json",
        HTTP_X_REQUEST_ID="req-east-1",
    )
    assert response.status_code == 201, response.json()
    posted_id = response["X-Request-ID"]
    assert posted_id != "req-east-1"  # the server's id, not the client's
    response = client.patch("/api/v1/clusters/east/", {"description": "East DC"}, format="json")
    assert response.status_code == 200, response.json()
    client.patch("/api/v1/clusters/east/", {"description": "East DC"}, format="json")
    created, updated = AuditEvent.objects.order_by("id")  # the unchanged PATCH: no event
    assert (created.actor_name, created.action, created.object_type) == (
        "plat",
        "create",
        "inventory.cluster",
    )
    assert created.request_id == posted_id and created.before is None
    assert created.after["source"] == "snapshot" and "sync_lock_token" not in created.after
    assert (updated.action, updated.before["description"], updated.after["description"]) == (
        "update",
        "",
        "East DC",
    )


def test_a_cluster_edited_on_its_page_is_an_event(personas):
    Cluster.objects.create(name="west")
    client = Client()
    client.force_login(personas["platform_engineer"])
    response = client.post(
        "/clusters/west/edit/",
        {"description": "West", "source": "in_cluster", "sync_interval_minutes": 0},
    )
    assert response.status_code == 302
    [event] = AuditEvent.objects.all()
    assert (event.actor_name, event.action, event.object_repr) == ("plat", "update", "west")
    assert event.before["source"] == "snapshot" and event.after["source"] == "in_cluster"


def test_sync_cluster_records_the_cluster_it_registers(personas):
    call_command(
        "sync_cluster",
        "--cluster",
        "lab",
        "--snapshot",
        str(world_snapshot_path()),
        "--remember",
        stdout=io.StringIO(),
    )
    create, update = AuditEvent.objects.order_by("id")
    assert (create.actor_name, create.action, create.object_repr) == (
        "manage.py sync_cluster",
        "create",
        "lab",
    )
    assert update.action == "update" and update.after["snapshot_paths"] == [
        str(world_snapshot_path())
    ]
    call_command(
        "sync_cluster",
        "--cluster",
        "lab",
        "--snapshot",
        str(world_snapshot_path()),
        "--remember",
        stdout=io.StringIO(),
    )
    assert AuditEvent.objects.count() == 2  # the same source again: nothing changed


def test_the_demo_leaves_a_verifiable_trail():
    call_command("demo", stdout=io.StringIO())
    by_demo = AuditEvent.objects.filter(actor_name="manage.py demo")
    types = set(by_demo.values_list("object_type", flat=True))
    assert {
        "tenants.tenant",
        "tenants.tenantnamespace",
        "tenants.tenantprincipal",
        "tenants.trustclass",
        "inventory.cluster",
        "providers.provider",
    } <= types
    registry = Tenant.objects.filter(is_system=False)
    assert by_demo.filter(object_type="tenants.tenant").count() == registry.count()
    # The system tenant Unclassified is created by the posture run, on the configured class.
    system = AuditEvent.objects.get(
        object_type="tenants.tenant", actor_name="GPUPOSTURE_UNCLASSIFIED_CLASS"
    )
    assert (system.after["slug"], system.after["trust_class"]) == ("unclassified", "external")
    assert audit_chain_verify().intact
