"""What the audit log keeps of users, roles (Django groups), MFA authenticators, e-mail
addresses and SSO identities when the admin changes them: names rather than ids, and never a
secret (no password hash, no TOTP secret or recovery-code seed, no identity provider's
claims)."""

from __future__ import annotations

import json
from typing import Any

from allauth.account.models import EmailAddress
from allauth.mfa.models import Authenticator
from allauth.socialaccount.models import SocialAccount
from django.contrib.auth.models import Group, Permission
from django.db import models
from django.db.models import QuerySet
from django.utils.crypto import salted_hmac


def _permissions(rows: QuerySet[Permission]) -> list[str]:
    pairs = rows.values_list("content_type__app_label", "codename")
    return sorted(f"{app}.{codename}" for app, codename in pairs)


def user_state(user: models.Model) -> dict[str, Any]:
    """The account's flags, roles and permissions; the password only as usable or not."""
    return {
        "username": user.get_username(),
        "email": user.email,
        "first_name": user.first_name,
        "last_name": user.last_name,
        "is_active": user.is_active,
        "is_staff": user.is_staff,
        "is_superuser": user.is_superuser,
        "groups": sorted(user.groups.values_list("name", flat=True)),
        "user_permissions": _permissions(user.user_permissions.all()),
        "has_usable_password": user.has_usable_password(),
    }


def group_state(group: Group) -> dict[str, Any]:
    """A role: its permissions and members (a deleted group takes the role from each)."""
    return {
        "name": group.name,
        "permissions": _permissions(group.permissions.all()),
        "members": sorted(group.user_set.values_list("username", flat=True)),
    }


def authenticator_state(authenticator: Authenticator) -> dict[str, Any]:
    """Whose authenticator, which kind, when used; its data (the TOTP secret, the recovery
    codes' seed, a WebAuthn credential) only as a keyed fingerprint, which shows that it
    changed and cannot be turned back into the secret."""
    data = json.dumps(authenticator.data, sort_keys=True, default=str)
    fingerprint = salted_hmac("gpuposture.audit.authenticator", data, algorithm="sha256")
    return {
        "user": authenticator.user.get_username() if authenticator.user_id else None,
        "type": authenticator.type,
        "created_at": authenticator.created_at,
        "last_used_at": authenticator.last_used_at,
        "data_fingerprint": fingerprint.hexdigest()[:16],
    }


def email_address_state(address: EmailAddress) -> dict[str, Any]:
    # A password reset goes to a verified address: changing one can hand over the account.
    return {
        "user": address.user.get_username(),
        "email": address.email,
        "verified": address.verified,
        "primary": address.primary,
    }


def social_account_state(account: SocialAccount) -> dict[str, Any]:
    """Which identity-provider account signs in as which user (not the provider's claims)."""
    return {"user": account.user.get_username(), "provider": account.provider, "uid": account.uid}
