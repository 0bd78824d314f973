"""Webhook signing secrets sealed at rest, and the signature receivers check.

A secret is sealed with Fernet under a key derived (HKDF-SHA256, its own purpose label) from
the same key material as the two-factor secrets (GPUPOSTURE_MFA_ENCRYPTION_KEY, see
gpuposture.base.mfa_secrets): a copy of the database holds no secret that could sign a
forged digest, and the two kinds of secret never share a Fernet key."""

from __future__ import annotations

import base64
import hashlib
import hmac
from functools import lru_cache

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings

SEALED_PREFIX = "fernet1:"
SIGNATURE_HEADER = "X-Gpuposture-Signature"


class SecretUnreadable(Exception):
    """The stored secret cannot be opened (the key changed): the user must set it again."""


@lru_cache(maxsize=4)
def _fernet(material: str) -> Fernet:
    hkdf = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"gpuposture webhooks")
    return Fernet(base64.urlsafe_b64encode(hkdf.derive(material.encode())))


def secret_seal(secret: str) -> str:
    fernet = _fernet(settings.GPUPOSTURE_MFA_ENCRYPTION_KEY)
    return SEALED_PREFIX + fernet.encrypt(secret.encode()).decode("ascii")


def secret_unseal(sealed: str) -> str:
    if not sealed.startswith(SEALED_PREFIX):
        raise SecretUnreadable("the webhook secret is not sealed; set it again")
    try:
        return (
            _fernet(settings.GPUPOSTURE_MFA_ENCRYPTION_KEY)
            .decrypt(sealed[len(SEALED_PREFIX) :].encode("ascii"))
            .decode()
        )
    except InvalidToken:
        raise SecretUnreadable(
            "the webhook secret cannot be decrypted (the encryption key changed); set it again"
        ) from None


def signature(secret: str, body: bytes) -> str:
    """The header value: `sha256=` and the hex HMAC-SHA256 of the exact body bytes."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def signature_valid(secret: str, body: bytes, header: str) -> bool:
    """What a receiver does (shown in docs/notifications.md): compare in constant time."""
    return hmac.compare_digest(signature(secret, body), header or "")
