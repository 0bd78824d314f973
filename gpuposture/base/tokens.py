"""API tokens: the key format, checking a key, and the DRF authentication class.

A key reads `gpp_<prefix>_<secret>`: the prefix (8 hex characters) names the token in lists,
the secret (`secrets.token_urlsafe(32)`, 256 bits) is what proves it. Only the sha256 of the
whole key is stored, so a database leak gives no working key; plain sha256 is enough for a
random 256-bit secret (no password to guess). Creating and revoking tokens are audit events and
live in `accounts.services`: this layer sits below the audit log and cannot import it.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import timedelta

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Q
from django.http import HttpRequest
from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, get_authorization_header

from gpuposture.base.models import ApiToken

KEY_PREFIX = "gpp"
PREFIX_LENGTH = 8
# A token's last use is written at most this often, so busy clients cost no write per call.
LAST_USED_EVERY = timedelta(minutes=1)
READ_ONLY_MESSAGE = "This token is read-only; create a read-write token to change things."
_SCHEMES = (b"bearer", b"token")

__all__ = [
    "READ_ONLY_MESSAGE",
    "ScopedTokenAuthentication",
    "hash_key",
    "new_key",
    "token_authenticate",
]


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def new_key() -> tuple[str, str]:
    """A fresh (prefix, key)."""
    prefix = secrets.token_hex(PREFIX_LENGTH // 2)
    return prefix, f"{KEY_PREFIX}_{prefix}_{secrets.token_urlsafe(32)}"


def _prefix_of(key: str) -> str | None:
    parts = key.split("_", 2)
    if len(parts) != 3 or parts[0] != KEY_PREFIX or len(parts[1]) != PREFIX_LENGTH:
        return None
    return parts[1]


def token_authenticate(key: str, *, ip: str | None = None) -> ApiToken | None:
    """The active token this key proves, its user loaded, or None: unknown, malformed,
    revoked, expired, or its user inactive. Records the use (throttled)."""
    prefix = _prefix_of(key)
    if prefix is None:
        return None
    token = ApiToken.objects.select_related("user").filter(prefix=prefix).first()
    # Found by its public prefix, then the hashes compared in constant time.
    if token is None or not hmac.compare_digest(token.key_hash, hash_key(key)):
        return None
    if not token.is_active or not token.user.is_active:
        return None
    _record_use(token, ip)
    return token


def _record_use(token: ApiToken, ip: str | None) -> None:
    now = timezone.now()
    cutoff = now - LAST_USED_EVERY
    if token.last_used_at is not None and token.last_used_at > cutoff:
        return
    # Conditional UPDATE: of concurrent first calls in a minute only one writes.
    written = (
        ApiToken.objects.filter(pk=token.pk)
        .filter(Q(last_used_at__isnull=True) | Q(last_used_at__lte=cutoff))
        .update(last_used_at=now, last_used_ip=ip)
    )
    if written:
        token.last_used_at, token.last_used_ip = now, ip


def _client_ip(request: HttpRequest) -> str | None:
    # REMOTE_ADDR only: X-Forwarded-For is whatever the client says unless a proxy rewrites it.
    return request.META.get("REMOTE_ADDR") or None


class ScopedTokenAuthentication(BaseAuthentication):
    """`Authorization: Bearer <key>` (or `Token <key>`, as before). Authenticates as the
    token's user, with `request.auth` the ApiToken; a read-only token's writes are refused by
    the project-wide permission class."""

    keyword = "Bearer"

    def authenticate(self, request) -> tuple[AbstractBaseUser, ApiToken] | None:
        header = get_authorization_header(request).split()
        if not header or header[0].lower() not in _SCHEMES:
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed(
                "Invalid Authorization header: send `Authorization: Bearer <key>`."
            )
        try:
            key = header[1].decode("ascii")
        except UnicodeDecodeError as exc:
            raise exceptions.AuthenticationFailed("Invalid token: not ASCII.") from exc
        token = token_authenticate(key, ip=_client_ip(request))
        if token is None:
            raise exceptions.AuthenticationFailed(
                "Invalid, expired or revoked token; create a new one at /account/tokens/."
            )
        return token.user, token

    def authenticate_header(self, request) -> str:
        return f'{self.keyword} realm="api"'


class ScopedTokenScheme(OpenApiAuthenticationExtension):
    """How the OpenAPI schema describes the token."""

    target_class = ScopedTokenAuthentication
    name = "tokenAuth"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "A personal API token from /account/tokens/ (`gpp_...`).",
        }
