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


def reads_providers(user: AbstractBaseUser | AnonymousUser) -> bool:
    """Providers and their assessments in full: posture readers and procurement."""
    return reads_all_posture(user) or has_role(user, PROCUREMENT)


def is_signed_in(user: AbstractBaseUser | AnonymousUser) -> bool:
    return bool(user.is_authenticated)


# What each role may DO, each action's roles named once: page links and buttons (`may`),
# page views (`role_required(*ACTION)`), API `write_roles` and services all read these.
TRIAGE_FINDINGS = (SECURITY_LEAD,)  # accept, reopen, assign, edit a ticket link
EDIT_TENANTS = (SECURITY_LEAD,)  # declare and update tenants (the tenants file's shape)
EDIT_TRUST_CLASSES = (SECURITY_LEAD,)  # a class's modes, weights and requirements
EDIT_CLUSTERS = (PLATFORM_ENGINEER,)
IMPORT_BULLETINS = (SECURITY_LEAD, PLATFORM_ENGINEER)
DECIDE_BULLETINS = (SECURITY_LEAD,)  # delete a bulletin, confirm or reject a held revision
EDIT_PATCH_SLA = (SECURITY_LEAD,)
EDIT_PROVIDERS = (PROCUREMENT,)  # providers, and assessments up to their submission
REVIEW_ASSESSMENTS = (SECURITY_LEAD,)
RECORD_RESETS = (PLATFORM_ENGINEER, SECURITY_LEAD)
# Sharing requests: a tenant viewer may ask too, but only for the tenants they own.
REQUEST_SHARING = (PLATFORM_ENGINEER, TENANT_VIEWER)
REQUEST_SHARING_FOR_ANY_TENANT = (PLATFORM_ENGINEER,)
DECIDE_SHARING = (PLATFORM_ENGINEER,)  # approve or deny, never one's own request
REVOKE_SHARING = (PLATFORM_ENGINEER, SECURITY_LEAD)


def may(user: AbstractBaseUser | AnonymousUser, action: tuple[str, ...]) -> bool:
    """Whether `user` may take `action` (one of the tuples above; superusers may take all)."""
    return has_role(user, *action)
