"""Creating and revoking personal API tokens, each an audit event (never with the key)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from audit.services import audit_record
from gpuposture.base.models import ApiToken
from gpuposture.base.tokens import hash_key, new_key

DEFAULT_DAYS = 90
NAME_MAX_LENGTH = ApiToken._meta.get_field("name").max_length


def max_days() -> int:
    return settings.GPUPOSTURE_TOKEN_MAX_DAYS


def _audit_state(token: ApiToken) -> dict[str, Any]:
    # What a reader of the log needs to know the token; never its key or hash.
    state = {
        "user": token.user.get_username(),
        "name": token.name,
        "prefix": token.prefix,
        "scope": token.scope,
        "expires_at": token.expires_at,
    }
    if token.revoked_at is not None:
        state["revoked_at"] = token.revoked_at
    return state


@transaction.atomic
def token_create(
    *, user: AbstractBaseUser, name: str, scope: str, days: int = DEFAULT_DAYS
) -> tuple[ApiToken, str]:
    """A new token for `user` and its key, which is returned here once and stored nowhere."""
    name = name.strip()
    if not name or len(name) > NAME_MAX_LENGTH:
        raise ValidationError(
            {"name": f"Give the token a name of 1 to {NAME_MAX_LENGTH} characters."}
        )
    if scope not in ApiToken.Scope.values:
        raise ValidationError({"scope": "The scope is read or write."})
    if not 1 <= days <= max_days():
        raise ValidationError({"days": f"A token lasts 1 to {max_days()} days."})
    if ApiToken.objects.filter(user=user, name=name, revoked_at__isnull=True).exists():
        raise ValidationError({"name": "You already have a token with this name."})
    now = timezone.now()
    for _attempt in range(3):
        prefix, key = new_key()
        try:
            # A savepoint: a prefix collision (one in 2**32) retries with a new key.
            with transaction.atomic():
                token = ApiToken.objects.create(
                    user=user,
                    name=name,
                    prefix=prefix,
                    key_hash=hash_key(key),
                    scope=scope,
                    created_at=now,
                    expires_at=now + timedelta(days=days),
                )
            break
        except IntegrityError:
            if ApiToken.objects.filter(user=user, name=name, revoked_at__isnull=True).exists():
                # Two creations of the same name at once: the other one won.
                raise ValidationError(
                    {"name": "You already have a token with this name."}
                ) from None
    else:  # pragma: no cover - three random prefix collisions in a row
        raise RuntimeError("could not pick a unique token prefix")
    audit_record(actor=user, action="create", obj=token, after=_audit_state(token))
    return token, key


@transaction.atomic
def token_revoke(*, token: ApiToken, user: AbstractBaseUser) -> ApiToken:
    """Revoke `token` (its owner or a superuser); revoking a revoked token changes nothing."""
    if token.user_id != user.pk and not user.is_superuser:
        raise PermissionDenied("Only the token's owner or a superuser may revoke it.")
    token = ApiToken.objects.select_for_update().select_related("user").get(pk=token.pk)
    if token.revoked_at is not None:
        return token
    before = _audit_state(token)
    token.revoked_at = timezone.now()
    token.save(update_fields=["revoked_at"])
    audit_record(actor=user, action="revoke", obj=token, before=before, after=_audit_state(token))
    return token
