"""Roles of DESIGN §10, held as Django groups, and who may read what."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

SECURITY_LEAD = "security_lead"
PLATFORM_ENGINEER = "platform_engineer"
PROCUREMENT = "procurement"
AUDITOR = "auditor"
TENANT_VIEWER = "tenant_viewer"

ROLES = (SECURITY_LEAD, PLATFORM_ENGINEER, PROCUREMENT, AUDITOR, TENANT_VIEWER)
# Roles that read every tenant's posture and the whole inventory.
POSTURE_READERS = frozenset({SECURITY_LEAD, PLATFORM_ENGINEER, AUDITOR})
# Roles that read the audit log (who changed what): not the people whose changes it records.
AUDIT_READERS = frozenset({SECURITY_LEAD, AUDITOR})


def user_roles(user: AbstractBaseUser | AnonymousUser) -> frozenset[str]:
    """The user's roles, cached on the user object for the request."""
    if not user.is_authenticated:
        return frozenset()
    cached = getattr(user, "_gpuposture_roles", None)
    if cached is None:
        cached = frozenset(user.groups.filter(name__in=ROLES).values_list("name", flat=True))
        user._gpuposture_roles = cached
    return cached


def reads_all_posture(user: AbstractBaseUser | AnonymousUser) -> bool:
    return bool(user.is_authenticated and (user.is_superuser or user_roles(user) & POSTURE_READERS))


def reads_audit_log(user: AbstractBaseUser | AnonymousUser) -> bool:
    return bool(user.is_authenticated and (user.is_superuser or user_roles(user) & AUDIT_READERS))


def has_any_role(user: AbstractBaseUser | AnonymousUser) -> bool:
    return bool(user.is_authenticated and (user.is_superuser or user_roles(user)))


def has_role(user: AbstractBaseUser | AnonymousUser, *roles: str) -> bool:
    return bool(user.is_authenticated and (user.is_superuser or user_roles(user) & set(roles)))
