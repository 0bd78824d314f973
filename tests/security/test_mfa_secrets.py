"""Two-factor secrets at rest: encrypted in the database, readable only with the key, never
shown in the admin; the migration encrypts rows written in clear before."""

from __future__ import annotations

import importlib
import time

import pytest
from allauth.mfa.models import Authenticator
from allauth.mfa.recovery_codes.internal.auth import RecoveryCodes
from allauth.mfa.totp.internal.auth import (
    TOTP,
    format_hotp_value,
    generate_totp_secret,
    hotp_value,
)
from django.apps import apps
from django.contrib.auth.models import User
from django.core.exceptions import ImproperlyConfigured
from django.db import connection
from django.test import Client

from gpuposture.base.mfa_secrets import SEALED_PREFIX, fernet_for, seal, unseal

pytestmark = pytest.mark.django_db

PASSWORD = "not-used-in-tests-1"  # tests.conftest.make_user's
MIGRATION = importlib.import_module("accounts.migrations.0001_mfa_secrets_encrypted")


def code_for(secret: str) -> str:
    return format_hotp_value(hotp_value(secret, int(time.time()) // 30))  # what an app shows


def enrol(user: User) -> str:
    secret = generate_totp_secret()
    TOTP.activate(user, secret)  # what allauth's activation page does once the code checks
    return secret


def stored_data(user: User) -> str:
    """The authenticators' data exactly as the database holds it (no model, no adapter)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT data FROM mfa_authenticator WHERE user_id = %s", [user.pk])
        return " ".join(str(row[0]) for row in cursor.fetchall())


def signed_in(username: str) -> Client:
    client = Client()
    response = client.post("/accounts/login/", {"login": username, "password": PASSWORD})
    assert response.status_code == 302
    return client


def test_enrolment_stores_no_secret_in_clear_and_the_code_still_signs_in(personas):
    user = personas["security_lead"]
    client = signed_in("sec")
    page = client.get("/accounts/2fa/totp/activate/", follow=True)
    if page.redirect_chain:  # "confirm your password" first
        client.post(page.redirect_chain[-1][0], {"password": PASSWORD})
        page = client.get("/accounts/2fa/totp/activate/")
    assert page.status_code == 200
    secret = client.session["mfa.totp.secret"]  # what the page shows once, as a QR code
    response = client.post("/accounts/2fa/totp/activate/", {"code": code_for(secret)})
    assert response.status_code == 302
    seed = RecoveryCodes(Authenticator.objects.get(user=user, type="recovery_codes"))
    stored = stored_data(user)
    assert stored.count(SEALED_PREFIX) == 2  # the TOTP secret and the recovery codes' seed
    assert secret not in stored and secret.lower() not in stored
    assert seed.generate_codes()[0] not in stored
    # Sign-in: password, then the app's code, decrypted from the row to check it.
    client = Client()
    client.post("/accounts/login/", {"login": "sec", "password": PASSWORD})
    response = client.post("/accounts/2fa/authenticate/", {"code": code_for(secret)})
    assert response.status_code == 302 and response["Location"] == "/home/"  # the role's home
    assert client.get("/findings/").status_code == 200


def test_a_secret_in_clear_is_refused_not_trusted(personas):
    # Whoever can write the table must not be able to pick a user's second factor.
    user = personas["security_lead"]
    authenticator = Authenticator.objects.create(
        user=user, type="totp", data={"secret": "JBSWY3DPEHPK3PXP"}
    )
    with pytest.raises(ImproperlyConfigured, match="stored in clear: run `manage.py migrate`"):
        TOTP(authenticator).validate_code(code_for("JBSWY3DPEHPK3PXP"))


def test_another_key_cannot_read_a_secret(settings, personas):
    secret = enrol(personas["security_lead"])
    authenticator = Authenticator.objects.get(user=personas["security_lead"], type="totp")
    settings.GPUPOSTURE_MFA_ENCRYPTION_KEY = "another-key-entirely-0123456789abcdef"
    with pytest.raises(ImproperlyConfigured, match="not the key it was encrypted with"):
        TOTP(authenticator).validate_code(code_for(secret))


def test_the_key_material_gives_a_fernet_key_of_its_own():
    one, two = fernet_for("a" * 32), fernet_for("b" * 32)
    sealed = seal(one, "JBSWY3DPEHPK3PXP")
    assert sealed.startswith(SEALED_PREFIX) and "JBSWY3DPEHPK3PXP" not in sealed
    assert unseal(one, sealed) == "JBSWY3DPEHPK3PXP"
    with pytest.raises(ImproperlyConfigured):
        unseal(two, sealed)


def test_the_migration_encrypts_rows_in_clear_once_and_reverses(personas):
    user = personas["security_lead"]
    clear = {
        "totp": {"secret": "JBSWY3DPEHPK3PXP"},
        "recovery_codes": {"seed": "ab" * 40, "used_mask": 0, "migrated_codes": ["12345678"]},
    }
    for kind, data in clear.items():
        Authenticator.objects.create(user=user, type=kind, data=data)
    webauthn = Authenticator.objects.create(
        user=user, type="webauthn", data={"name": "key", "credential": {"id": "public"}}
    )

    MIGRATION.seal_secrets(apps, None)
    stored = stored_data(user)
    for value in ("JBSWY3DPEHPK3PXP", "ab" * 40, "12345678"):
        assert value not in stored
    sealed = {a.type: a.data for a in Authenticator.objects.filter(user=user)}
    assert sealed["recovery_codes"]["used_mask"] == 0
    assert sealed["webauthn"] == webauthn.data  # a public key: nothing to hide
    # Running again changes nothing: sealed values are not sealed twice.
    MIGRATION.seal_secrets(apps, None)
    assert {a.type: a.data for a in Authenticator.objects.filter(user=user)} == sealed
    # The code reads them (a sign-in works on a migrated row).
    totp = Authenticator.objects.get(user=user, type="totp")
    assert TOTP(totp).validate_code(code_for("JBSWY3DPEHPK3PXP"))
    recovery = RecoveryCodes(Authenticator.objects.get(user=user, type="recovery_codes"))
    assert recovery.get_unused_codes() == ["12345678"]
    # Backwards: clear again, as the code before this change reads them.
    MIGRATION.unseal_secrets(apps, None)
    restored = {a.type: a.data for a in Authenticator.objects.filter(user=user, type__in=clear)}
    assert restored == clear


def test_the_admin_never_shows_or_edits_a_secret(personas):
    root = User.objects.create_superuser("root", password=PASSWORD)
    secret = enrol(personas["security_lead"])
    authenticator = Authenticator.objects.get(user=personas["security_lead"], type="totp")
    client = Client()
    client.force_login(root)
    listing = client.get("/admin/mfa/authenticator/")
    assert listing.status_code == 200 and b"sec" in listing.content
    page = client.get(f"/admin/mfa/authenticator/{authenticator.pk}/change/")
    assert page.status_code == 200
    body = page.content.decode()
    assert secret not in body and SEALED_PREFIX not in body and 'name="data"' not in body
    posted = client.post(
        f"/admin/mfa/authenticator/{authenticator.pk}/change/",
        {"user": root.pk, "type": "totp", "data": '{"secret": "JBSWY3DPEHPK3PXP"}'},
    )
    assert posted.status_code == 403
    assert client.get("/admin/mfa/authenticator/add/").status_code == 403
    authenticator.refresh_from_db()
    assert authenticator.user == personas["security_lead"]
    assert TOTP(authenticator).validate_code(code_for(secret))
