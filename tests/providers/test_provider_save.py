"""Registering and changing a provider from its page and from the API: the same record, the
same contacts, the same audit events, whichever way it came in."""

from __future__ import annotations

import pytest
from django.test import Client

from audit.models import AuditEvent
from providers.models import Provider
from tests.conftest import api_client

pytestmark = pytest.mark.django_db


def page_body(**values: object) -> dict[str, object]:
    """The provider form's POST with its contacts formset, as a browser sends it: every row's
    role select holds a value (the first choice on a blank row)."""
    body: dict[str, object] = {
        "slug": "helio",
        "name": "Helio GPU",
        "website": "helio.example",
        "contact_name": "",
        "contact_email": "",
        "notes": "",
        "contacts-TOTAL_FORMS": "2",
        "contacts-INITIAL_FORMS": "0",
        "contacts-MIN_NUM_FORMS": "0",
        "contacts-MAX_NUM_FORMS": "1000",
    }
    body.update(values)
    for row in range(int(str(body["contacts-TOTAL_FORMS"]))):
        body.setdefault(f"contacts-{row}-role", "security")
    return body


def contacts(provider: Provider) -> list[tuple[str, str, str]]:
    return [(c.name, c.email, c.role) for c in provider.contacts.all()]


def events() -> list[tuple[str, str, object, object]]:
    found = AuditEvent.objects.filter(object_type="providers.provider").order_by("id")
    return [
        (e.action, e.actor_name, (e.before or {}).get("name"), e.after.get("name")) for e in found
    ]


def browser(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_page_registers_then_changes_a_provider_with_contacts(personas):
    client = browser(personas["procurement"])
    created = client.post(
        "/providers/new/",
        page_body(**{"contacts-0-name": "Marta", "contacts-0-email": "marta@helio.example"}),
    )
    assert created.status_code == 302 and created["Location"] == "/providers/helio/"
    provider = Provider.objects.get(slug="helio")
    assert provider.website == "https://helio.example"
    assert contacts(provider) == [("Marta", "marta@helio.example", "security")]
    marta = provider.contacts.get()
    changed = client.post(
        "/providers/helio/edit/",
        page_body(
            name="Helio GPU Ltd",
            **{
                "contacts-TOTAL_FORMS": "3",
                "contacts-INITIAL_FORMS": "1",
                "contacts-0-id": str(marta.pk),
                "contacts-0-provider": str(provider.pk),
                "contacts-0-name": "Marta",
                "contacts-0-email": "marta@helio.example",
                "contacts-0-DELETE": "on",
                "contacts-1-name": "Ivo",
                "contacts-1-role": "commercial",
            },
        ),
    )
    assert changed.status_code == 302
    provider.refresh_from_db()
    assert provider.name == "Helio GPU Ltd"
    assert contacts(provider) == [("Ivo", "", "commercial")]
    assert events() == [
        ("create", "proc", None, "Helio GPU"),
        ("update", "proc", "Helio GPU", "Helio GPU Ltd"),
    ]


def test_a_page_edit_keeps_the_contacts_it_does_not_touch(personas):
    client = browser(personas["procurement"])
    client.post("/providers/new/", page_body(**{"contacts-0-name": "Marta"}))
    provider = Provider.objects.get(slug="helio")
    marta = provider.contacts.get()
    body = page_body(
        notes="renewal in May",
        **{
            "contacts-TOTAL_FORMS": "3",
            "contacts-INITIAL_FORMS": "1",
            "contacts-0-id": str(marta.pk),
            "contacts-0-provider": str(provider.pk),
            "contacts-0-name": "Marta",
        },
    )
    assert client.post("/providers/helio/edit/", body).status_code == 302
    provider.refresh_from_db()
    assert provider.notes == "renewal in May"
    assert contacts(provider) == [("Marta", "", "security")]


def test_an_invalid_page_saves_nothing(personas):
    client = browser(personas["procurement"])
    response = client.post("/providers/new/", page_body(slug="not a slug"))
    assert response.status_code == 200
    assert not Provider.objects.exists() and events() == []


def test_the_api_and_the_page_leave_the_same_provider(personas):
    browser(personas["procurement"]).post(
        "/providers/new/",
        page_body(**{"contacts-0-name": "Marta", "contacts-0-role": "security"}),
    )
    api = api_client(personas["procurement"])
    body = {
        "slug": "nimbus",
        "name": "Helio GPU",
        "website": "https://helio.example",
        "contacts": [{"name": "Marta", "role": "security"}],
    }
    assert api.post("/api/v1/providers/", body, format="json").status_code == 201
    by_page, by_api = Provider.objects.get(slug="helio"), Provider.objects.get(slug="nimbus")
    fields = ["name", "website", "contact_name", "contact_email", "notes"]
    assert [getattr(by_page, f) for f in fields] == [getattr(by_api, f) for f in fields]
    assert contacts(by_page) == contacts(by_api)
    # A change without contacts leaves them; a list replaces them.
    assert api.patch("/api/v1/providers/nimbus/", {"notes": "n"}, format="json").status_code == 200
    assert contacts(by_api) == [("Marta", "", "security")]
    replaced = {"contacts": [{"name": "Ivo", "role": "commercial"}]}
    assert api.patch("/api/v1/providers/nimbus/", replaced, format="json").status_code == 200
    assert contacts(by_api) == [("Ivo", "", "commercial")]
    assert [e[0] for e in events()] == ["create", "create", "update", "update"]
