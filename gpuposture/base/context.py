"""Template context shared by every page: the menu the user's roles can use, and the roles.

Each menu entry names the roles that can do something on that page; a user sees the entries of
any role they hold (a superuser sees all). Pages stay reachable by URL for every role their
view allows (their data scoped by visible_to); the menu just leaves out what a role has no use
for, such as the approvals queue for procurement or the audit log for a tenant viewer.
"""

from __future__ import annotations

from django.http import HttpRequest

from gpuposture.base.roles import (
    AUDITOR,
    PLATFORM_ENGINEER,
    PROCUREMENT,
    SECURITY_LEAD,
    TENANT_VIEWER,
    reads_all_posture,
    user_roles,
)

_POSTURE = frozenset({SECURITY_LEAD, PLATFORM_ENGINEER, AUDITOR})
_EVERY_ROLE = frozenset({SECURITY_LEAD, PLATFORM_ENGINEER, PROCUREMENT, AUDITOR, TENANT_VIEWER})

# (url name, label, roles that use it), in menu order.
MENU: tuple[tuple[str, str, frozenset[str]], ...] = (
    ("home", "Home", _EVERY_ROLE),
    ("overview", "Overview", _POSTURE),
    ("tenant-list", "Tenants", _POSTURE | {TENANT_VIEWER}),
    ("finding-list", "Findings", _POSTURE | {TENANT_VIEWER}),
    ("check-list", "Checks", _POSTURE | {TENANT_VIEWER}),
    ("check-frameworks", "Frameworks", frozenset({SECURITY_LEAD, AUDITOR})),
    ("cluster-list", "Clusters", _POSTURE),
    ("node-list", "Nodes", _POSTURE),
    ("patch-status", "Patching", _POSTURE),
    ("utilisation", "Utilisation", _POSTURE | {TENANT_VIEWER}),
    ("approvals-queue", "Approvals", frozenset({SECURITY_LEAD, PLATFORM_ENGINEER, AUDITOR})),
    ("sharing-request-list", "Sharing requests", frozenset({TENANT_VIEWER})),
    ("mig-partitioner", "MIG", frozenset({SECURITY_LEAD, PLATFORM_ENGINEER})),
    ("enforcement", "Enforcement", _POSTURE),
    ("provider-list", "Providers", frozenset({SECURITY_LEAD, PROCUREMENT, AUDITOR})),
    ("bulletin-list", "Bulletins", frozenset({SECURITY_LEAD, PLATFORM_ENGINEER, AUDITOR})),
    ("audit-log", "Audit log", frozenset({SECURITY_LEAD, AUDITOR})),
)


def menu_for(user) -> list[tuple[str, str]]:
    if user is None or not user.is_authenticated:
        return []
    if user.is_superuser:
        return [(url_name, label) for url_name, label, _roles in MENU]
    roles = user_roles(user)
    return [(url_name, label) for url_name, label, allowed in MENU if allowed & roles]


def navigation(request: HttpRequest) -> dict[str, object]:
    user = getattr(request, "user", None)
    return {
        "navigation": menu_for(user),
        "user_roles": sorted(user_roles(user)) if user is not None else [],
        # Empty states tell the readers of everything how to fill a list, and everyone else
        # that the list holds only what they may see (templates/_not_yours.html).
        "sees_everything": user is not None and reads_all_posture(user),
    }
