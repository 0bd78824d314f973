"""Who may read the audit log (auditors, security leads, superusers: nobody else), its filters,
pagination and diff, on the page and in the API, and the queries each costs."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import time_machine
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from audit.models import AuditEvent
from audit.services import audit_record
from tests.conftest import api_client

pytestmark = pytest.mark.django_db

API = "/api/v1/audit-events/"
PAGE = "/audit/"
READERS = ("auditor", "security_lead")
REFUSED = ("platform_engineer", "procurement", "viewer_alpha", "no_role")


def event(n: int, *, actor: object = "manage.py test", **extra: object) -> AuditEvent:
    fields: dict[str, object] = {
        "action": "update",
        "object_type": "tenants.tenant",
        "object_id": n,
        "object_repr": f"tenant-{n}",
        "before": {"name": f"old {n}", "same": 1},
        "after": {"name": f"new {n}", "same": 1},
    }
    fields.update(extra)
    return audit_record(actor=actor, **fields)


def page_client(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_readers_see_the_log_in_the_api(personas):
    first = event(1)
    for role in READERS:
        client = api_client(personas[role])
        body = client.get(API).json()
        assert body["count"] == 1 and body["results"][0]["id"] == first.pk, role
        detail = client.get(f"{API}{first.pk}/").json()
        assert detail["hash"] == first.hash and detail["actor"] == "manage.py test"
        assert detail["before"] == {"name": "old 1", "same": 1}


def test_a_superuser_reads_the_log():
    root = User.objects.create_superuser("root", password="not-used-in-tests-1")
    event(1)
    assert api_client(root).get(API).json()["count"] == 1
    assert page_client(root).get(PAGE).status_code == 200


def test_everyone_else_is_refused(personas):
    first = event(1)
    for role in REFUSED:
        client = api_client(personas[role])
        assert client.get(API).status_code == 403, role
        assert client.get(f"{API}{first.pk}/").status_code == 403, role
        assert page_client(personas[role]).get(PAGE).status_code == 403, role
    assert api_client(None).get(API).status_code in (401, 403)
    anonymous = Client().get(PAGE)
    assert anonymous.status_code == 302 and "/login/" in anonymous["Location"]


def test_the_api_is_read_only_even_for_readers(personas):
    first = event(1)
    client = api_client(personas["auditor"])
    assert client.post(API, {}, format="json").status_code in (403, 405)
    assert client.delete(f"{API}{first.pk}/").status_code in (403, 405)
    assert client.patch(f"{API}{first.pk}/", {"action": "x"}, format="json").status_code in (
        403,
        405,
    )
    assert AuditEvent.objects.get().action == "update"


def test_the_navigation_shows_the_log_to_readers_only(personas):
    assert 'href="/audit/"' in page_client(personas["auditor"]).get("/").content.decode()
    assert 'href="/audit/"' in page_client(personas["security_lead"]).get("/").content.decode()
    for role in ("platform_engineer", "procurement", "viewer_alpha"):
        assert 'href="/audit/"' not in page_client(personas[role]).get("/").content.decode()


def ids(response) -> list[int]:
    return [row["id"] for row in response.json()["results"]]


def test_api_filters_and_newest_first(personas):
    with time_machine.travel(datetime(2026, 1, 10, 12, tzinfo=UTC), tick=False):
        old = event(1, actor=personas["security_lead"], action="accept", request_id="req-a")
    with time_machine.travel(datetime(2026, 2, 10, 12, tzinfo=UTC), tick=False):
        mid = event(2, object_type="inventory.cluster", request_id="req-b")
    with time_machine.travel(datetime(2026, 3, 10, 12, tzinfo=UTC), tick=False):
        new = event(3, action="delete", after=None, request_id="req-b")
    client = api_client(personas["auditor"])
    assert ids(client.get(API)) == [new.pk, mid.pk, old.pk]
    assert ids(client.get(API, {"actor": "sec"})) == [old.pk]
    assert ids(client.get(API, {"actor": "manage.py test"})) == [new.pk, mid.pk]
    assert ids(client.get(API, {"action": "delete"})) == [new.pk]
    assert ids(client.get(API, {"object_type": "inventory.cluster"})) == [mid.pk]
    assert ids(client.get(API, {"object_type": "tenants.tenant", "object_id": "1"})) == [old.pk]
    assert ids(client.get(API, {"request_id": "req-b"})) == [new.pk, mid.pk]
    assert ids(client.get(API, {"since": "2026-02-01T00:00:00Z"})) == [new.pk, mid.pk]
    assert ids(client.get(API, {"until": "2026-02-11"})) == [mid.pk, old.pk]
    window = {"since": "2026-02-01", "until": "2026-03-01T00:00:00+00:00"}
    assert ids(client.get(API, window)) == [mid.pk]
    bad = client.get(API, {"since": "last tuesday"})
    assert bad.status_code == 400 and "since" in bad.json()["errors"]


def test_api_pagination(personas):
    for n in range(1, 6):
        event(n)
    body = api_client(personas["auditor"]).get(API, {"page_size": 2}).json()
    assert body["count"] == 5 and len(body["results"]) == 2 and body["next"]


def test_the_page_shows_events_with_a_diff_of_changed_keys(personas):
    event(1, before=None, after={"slug": "alpha", "name": "Team Alpha"})
    event(2, request_id="req-42")
    html = page_client(personas["auditor"]).get(PAGE).content.decode()
    assert "tenant-2" in html and "tenant-1" in html
    assert 'title="name">name</span>: <del>old 2</del> → <ins>new 2</ins>' in html
    assert 'title="same"' not in html  # unchanged keys are not shown
    assert 'title="slug">slug</span>: <ins>alpha</ins>' in html  # a create shows all
    assert 'href="?request_id=req-42"' in html


def test_the_page_filters_and_paginates(personas):
    for n in range(1, 53):
        event(n, action="accept" if n == 7 else "update")
    client = page_client(personas["security_lead"])
    first = client.get(PAGE).content.decode()
    assert "page 1 of 2 (52 in all)" in first and "tenant-52" in first and "tenant-2<" not in first
    second = client.get(PAGE, {"page": 2}).content.decode()
    assert "tenant-2<" in second and "tenant-52" not in second
    filtered = client.get(PAGE, {"action": "accept"}).content.decode()
    assert "tenant-7<" in filtered and "tenant-8<" not in filtered
    empty = client.get(PAGE, {"actor": "nobody-at-all"}).content.decode()
    assert "No event matches these filters" in empty


def count_queries(fetch) -> int:
    with CaptureQueriesContext(connection) as ctx:
        response = fetch()
    assert response.status_code == 200
    return len(ctx.captured_queries)


@pytest.mark.parametrize("kind", ["api", "page"])
def test_query_count_does_not_grow_with_size(personas, kind):
    counts = []
    for size in (3, 30):
        for n in range(size):
            event(n)
        user = User.objects.get(pk=personas["auditor"].pk)  # no roles cached
        client = api_client(user) if kind == "api" else page_client(user)
        counts.append(count_queries(lambda c=client: c.get(API if kind == "api" else PAGE)))
    assert counts[0] == counts[1], counts
    # API: the user's roles, count, page. Page: session, user, roles, count, page.
    assert counts[1] <= (3 if kind == "api" else 5), counts
