"""Two-factor secrets encrypted at rest (MFA_ADAPTER), with a key from the environment.

allauth keeps a TOTP authenticator's secret and the seed its recovery codes are made from in
the database, and passes both through its MFA adapter's encrypt/decrypt hooks (identity by
default). This adapter seals them with Fernet (AES-128-CBC and HMAC-SHA256) under a key derived
from GPUPOSTURE_MFA_ENCRYPTION_KEY, so a copy of the database (a backup, a replica, a SQL
injection) holds no code generator. A sealed value starts with SEALED_PREFIX; a value without
it is refused rather than trusted, because a row anyone could write in clear would let them
choose a user's second factor. The migration accounts 0001 seals rows written before.
"""

from __future__ import annotations

import base64
from functools import lru_cache
from typing import Any

from allauth.mfa.adapter import DefaultMFAAdapter
from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

SEALED_PREFIX = "fernet1:"
# The fields of Authenticator.data that allauth passes through encrypt(), per type.
SECRET_FIELDS = {"totp": ("secret",), "recovery_codes": ("seed",)}
SECRET_LISTS = {"recovery_codes": ("migrated_codes",)}  # codes imported from django-allauth 0.x
KEY_SETTING = "GPUPOSTURE_MFA_ENCRYPTION_KEY"


@lru_cache(maxsize=4)
def fernet_for(material: str) -> Fernet:
    """The Fernet key for any key material (a random string of 32+ characters): HKDF-SHA256
    with a purpose label, so the same material used elsewhere gives another key."""
    hkdf = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"gpuposture mfa secrets")
    return Fernet(base64.urlsafe_b64encode(hkdf.derive(material.encode())))


def is_sealed(value: str) -> bool:
    return value.startswith(SEALED_PREFIX)


def seal(fernet: Fernet, text: str) -> str:
    return SEALED_PREFIX + fernet.encrypt(text.encode()).decode("ascii")


def unseal(fernet: Fernet, value: str) -> str:
    if not is_sealed(value):
        raise ImproperlyConfigured(
            "A two-factor secret is stored in clear: run `manage.py migrate` to encrypt it."
        )
    try:
        return fernet.decrypt(value[len(SEALED_PREFIX) :].encode("ascii")).decode()
    except InvalidToken:
        raise ImproperlyConfigured(
            f"A two-factor secret cannot be decrypted: {KEY_SETTING} is not the key it was "
            "encrypted with."
        ) from None


def _map_secrets(kind: str, data: dict[str, Any], change: Any) -> dict[str, Any]:
    """`data` with `change` applied to each secret field of an authenticator of type `kind`."""
    data = dict(data)
    for field in SECRET_FIELDS.get(kind, ()):
        if isinstance(data.get(field), str):
            data[field] = change(data[field])
    for field in SECRET_LISTS.get(kind, ()):
        if isinstance(data.get(field), list):
            data[field] = [change(item) for item in data[field]]
    return data


def sealed_data(fernet: Fernet, kind: str, data: dict[str, Any]) -> dict[str, Any]:
    """An authenticator's data with every secret sealed; sealed ones are left as they are
    (the migration may run twice)."""
    return _map_secrets(kind, data, lambda v: v if is_sealed(v) else seal(fernet, v))


def unsealed_data(fernet: Fernet, kind: str, data: dict[str, Any]) -> dict[str, Any]:
    """The reverse of sealed_data (the migration's way back); clear values stay clear."""
    return _map_secrets(kind, data, lambda v: unseal(fernet, v) if is_sealed(v) else v)


def settings_fernet() -> Fernet:
    return fernet_for(getattr(settings, KEY_SETTING))


class EncryptingMfaAdapter(DefaultMFAAdapter):
    """MFA_ADAPTER: allauth's, with its secrets sealed in the database."""

    def encrypt(self, text: str) -> str:
        return seal(settings_fernet(), text)

    def decrypt(self, encrypted_text: str) -> str:
        return unseal(settings_fernet(), encrypted_text)
