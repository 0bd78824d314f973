"""Personal API tokens: named, scoped, expiring, hashed, revocable, acting as their user."""

from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.services import token_create, token_revoke
from audit.models import AuditEvent
from gpuposture.base.models import ApiToken
from gpuposture.base.tokens import READ_ONLY_MESSAGE

pytestmark = pytest.mark.django_db

PAGE = "/account/tokens/"


def bearer(key: str, scheme: str = "Bearer") -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"{scheme} {key}")
    return client


def browser(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_a_token_reads_with_bearer_and_with_the_old_token_header(personas):
    _token, key = token_create(user=personas["auditor"], name="ci", scope="read")
    assert key.startswith("gpp_")
    for scheme in ("Bearer", "Token", "bearer"):
        response = bearer(key, scheme).get("/api/v1/trust-classes/")
        assert response.status_code == 200, scheme
        assert response.json()["results"], scheme  # the demo trust classes, read as the auditor


def test_a_read_only_token_is_refused_every_change_with_a_clear_message(personas):
    _token, key = token_create(user=personas["security_lead"], name="ro", scope="read")
    client = bearer(key)
    patch = client.patch("/api/v1/patch-sla/", {"critical": 3}, format="json")
    assert patch.status_code == 403 and patch.json() == {"detail": READ_ONLY_MESSAGE}
    post = client.post("/api/v1/bulletins/", {}, format="json")
    assert post.status_code == 403 and post.json()["detail"] == READ_ONLY_MESSAGE
    # The same user through a session may make the change: the token's scope refused it.
    session = APIClient()
    session.force_login(personas["security_lead"])
    assert session.patch("/api/v1/patch-sla/", {"critical": 3}, format="json").status_code == 200


def test_a_read_write_token_writes_only_where_its_users_role_may(personas):
    _t, engineer_key = token_create(user=personas["platform_engineer"], name="rw", scope="write")
    # Past the permissions (a platform engineer registers clusters): {} is then a 400.
    assert bearer(engineer_key).post("/api/v1/clusters/", {}, format="json").status_code == 400
    _t, auditor_key = token_create(user=personas["auditor"], name="rw", scope="write")
    refused = bearer(auditor_key).post("/api/v1/clusters/", {}, format="json")
    assert refused.status_code == 403
    assert refused.json()["detail"] != READ_ONLY_MESSAGE and "role" in refused.json()["detail"]


def test_expired_revoked_unknown_and_inactive_tokens_get_401(personas):
    user = personas["auditor"]
    expired, expired_key = token_create(user=user, name="old", scope="read", days=1)
    revoked, revoked_key = token_create(user=user, name="gone", scope="read")
    token_revoke(token=revoked, user=user)
    _t, good_key = token_create(user=user, name="good", scope="read")
    assert bearer(good_key).get("/api/v1/findings/").status_code == 200
    with time_machine.travel(expired.expires_at + timedelta(seconds=1)):
        response = bearer(expired_key).get("/api/v1/findings/")
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert "expired" in response.json()["detail"]
    for key in (revoked_key, good_key[:-1] + ("A" if good_key[-1] != "A" else "B"), "nonsense"):
        assert bearer(key).get("/api/v1/findings/").status_code == 401, key
    assert bearer("").get("/api/v1/findings/").status_code == 401  # "Bearer" and no key
    User.objects.filter(pk=user.pk).update(is_active=False)
    assert bearer(good_key).get("/api/v1/findings/").status_code == 401
    anonymous = APIClient().get("/api/v1/findings/")
    assert anonymous.status_code == 401 and "WWW-Authenticate" in anonymous


def test_the_database_holds_no_plaintext_key(personas):
    token, key = token_create(user=personas["auditor"], name="ci", scope="write")
    secret = key.split("_", 2)[2]
    row = ApiToken.objects.filter(pk=token.pk).values().get()
    for value in row.values():
        assert key not in str(value) and secret not in str(value)
    assert len(row["key_hash"]) == 64 and row["prefix"] in key
    events = AuditEvent.objects.filter(object_type="gpuposture_base.apitoken")
    assert [e.action for e in events] == ["create"]
    stored = str(events.values().get())
    assert secret not in stored and row["key_hash"] not in stored
    assert events.get().after["name"] == "ci" and events.get().after["scope"] == "write"


def test_last_use_is_recorded_at_most_once_a_minute(personas):
    token, key = token_create(user=personas["auditor"], name="ci", scope="read")
    assert token.last_used_at is None
    start = timezone.now()
    with time_machine.travel(start, tick=False):
        bearer(key).get("/api/v1/findings/")
    token.refresh_from_db()
    assert token.last_used_at == start and token.last_used_ip == "127.0.0.1"
    soon = start + timedelta(seconds=30)
    with time_machine.travel(soon, tick=False), CaptureQueriesContext(connection) as queries:
        bearer(key).get("/api/v1/findings/")
    assert not any(q["sql"].startswith("UPDATE") for q in queries.captured_queries)
    token.refresh_from_db()
    assert token.last_used_at == start
    later = start + timedelta(minutes=2)
    with time_machine.travel(later, tick=False):
        bearer(key).get("/api/v1/findings/")
    token.refresh_from_db()
    assert token.last_used_at == later


def test_a_tenant_viewers_token_sees_only_their_tenant(small_world, personas):
    _t, key = token_create(user=personas["viewer_alpha"], name="dash", scope="read")
    rows = bearer(key).get("/api/v1/tenants/").json()["results"]
    assert [row["slug"] for row in rows] == ["alpha"]
    _t, lead_key = token_create(user=personas["security_lead"], name="dash", scope="read")
    # A lead also reads the system tenant Unclassified (namespaces nobody owns); a viewer never.
    assert {r["slug"] for r in bearer(lead_key).get("/api/v1/tenants/").json()["results"]} == {
        "alpha",
        "beta",
        "unclassified",
    }


def test_only_the_owner_or_a_superuser_revokes(personas):
    token, key = token_create(user=personas["auditor"], name="ci", scope="read")
    other = browser(personas["security_lead"])
    assert other.post(f"{PAGE}{token.pk}/revoke/").status_code == 404
    with pytest.raises(PermissionDenied):
        token_revoke(token=token, user=personas["security_lead"])
    token.refresh_from_db()
    assert token.revoked_at is None
    assert bearer(key).get("/api/v1/findings/").status_code == 200
    owner = browser(personas["auditor"])
    assert owner.get(f"{PAGE}{token.pk}/revoke/").status_code == 405  # a GET changes nothing
    response = owner.post(f"{PAGE}{token.pk}/revoke/", follow=True)
    assert response.status_code == 200 and "revoked" in response.content.decode()
    assert bearer(key).get("/api/v1/findings/").status_code == 401
    event = AuditEvent.objects.get(action="revoke")
    assert event.actor_name == "aud" and event.after["revoked_at"]


def test_the_page_lists_only_your_tokens_and_shows_a_new_key_once(personas):
    token_create(user=personas["security_lead"], name="leads-secret-pipeline", scope="write")
    page = browser(personas["auditor"])
    assert "API tokens" in page.get("/").content.decode()  # the header link
    created = page.post(PAGE, {"name": "nightly-export", "scope": "read", "days": 30})
    text = created.content.decode()
    token = ApiToken.objects.get(name="nightly-export")
    key = next(w for w in text.replace('"', " ").replace("<", " ").split() if w.startswith("gpp_"))
    assert key.startswith(f"gpp_{token.prefix}_") and "shown only this once" in text
    assert "no-store" in created["Cache-Control"]
    assert bearer(key).get("/api/v1/findings/").status_code == 200
    assert token.user == personas["auditor"] and token.scope == "read"
    assert timedelta(days=29) < token.expires_at - timezone.now() <= timedelta(days=30)
    again = page.get(PAGE).content.decode()
    assert "nightly-export" in again and token.prefix in again
    assert key not in again and "leads-secret-pipeline" not in again
    assert "leads-secret-pipeline" in browser(personas["security_lead"]).get(PAGE).content.decode()


def test_expiry_defaults_to_90_days_and_is_capped(personas, settings):
    token, _key = token_create(user=personas["auditor"], name="default", scope="read")
    assert (token.expires_at - token.created_at) == timedelta(days=90)
    with pytest.raises(ValidationError):
        token_create(user=personas["auditor"], name="long", scope="read", days=366)
    settings.GPUPOSTURE_TOKEN_MAX_DAYS = 30
    page = browser(personas["auditor"])
    refused = page.post(PAGE, {"name": "long", "scope": "read", "days": 31})
    assert refused.status_code == 400 and "30" in refused.content.decode()
    assert page.post(PAGE, {"name": "long", "scope": "read", "days": 30}).status_code == 200
    assert ApiToken.objects.filter(name="long").count() == 1


def test_names_are_unique_per_user_among_tokens_not_revoked(personas):
    first, _ = token_create(user=personas["auditor"], name="ci", scope="read")
    with pytest.raises(ValidationError):
        token_create(user=personas["auditor"], name="ci", scope="write")
    token_create(user=personas["security_lead"], name="ci", scope="read")  # another user's
    token_revoke(token=first, user=personas["auditor"])
    token_create(user=personas["auditor"], name="ci", scope="write")  # the name is free again
    page = browser(personas["auditor"]).post(PAGE, {"name": "ci", "scope": "read", "days": 5})
    assert page.status_code == 400 and "already have a token" in page.content.decode()


def test_hostile_token_names_are_shown_escaped(personas):
    name = '<script>alert("x")</script>'
    token_create(user=personas["auditor"], name=name, scope="read")
    text = browser(personas["auditor"]).get(PAGE).content.decode()
    assert "<script>alert" not in text and "&lt;script&gt;alert" in text


def test_users_without_a_role_manage_no_tokens(personas):
    page = browser(personas["no_role"])
    assert page.get(PAGE).status_code == 403
    assert page.post(PAGE, {"name": "x", "scope": "read", "days": 5}).status_code == 403
    assert not ApiToken.objects.exists()
    anonymous = Client().get(PAGE)
    assert anonymous.status_code == 302 and "/login/" in anonymous["Location"]


def test_a_superuser_revokes_any_token_in_the_admin(personas):
    token, key = token_create(user=personas["auditor"], name="ci", scope="read")
    admin = User.objects.create_superuser("root", password="not-used-in-tests-1")
    page = browser(admin)
    listing = page.get("/admin/gpuposture_base/apitoken/").content.decode()
    assert token.prefix in listing and token.key_hash not in listing
    assert page.get(f"/admin/gpuposture_base/apitoken/{token.pk}/change/").status_code == 200
    page.post(
        "/admin/gpuposture_base/apitoken/",
        {"action": "revoke", "_selected_action": [token.pk]},
    )
    token.refresh_from_db()
    assert token.revoked_at is not None
    assert bearer(key).get("/api/v1/findings/").status_code == 401
    assert AuditEvent.objects.get(action="revoke").actor_name == "root"


def test_the_openapi_schema_describes_bearer_tokens(personas):
    _t, key = token_create(user=personas["auditor"], name="docs", scope="read")
    schema = bearer(key).get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert schema.status_code == 200
    scheme = schema.json()["components"]["securitySchemes"]["tokenAuth"]
    assert scheme["type"] == "http" and scheme["scheme"] == "bearer"
