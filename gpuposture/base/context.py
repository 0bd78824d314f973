"""Template context shared by every page: navigation and the user's roles."""

from __future__ import annotations

from django.http import HttpRequest

from gpuposture.base.roles import reads_audit_log, user_roles

NAVIGATION = (
    ("overview", "Overview"),
    ("finding-list", "Findings"),
    ("check-list", "Checks"),
    ("cluster-list", "Clusters"),
    ("node-list", "Nodes"),
    ("patch-status", "Patching"),
    ("utilisation", "Utilisation"),
    ("approvals-queue", "Approvals"),
    ("mig-partitioner", "MIG"),
    ("enforcement", "Enforcement"),
    ("provider-list", "Providers"),
    ("bulletin-list", "Bulletins"),
)
# Shown only to the roles that may open it (auditors, security leads, superusers).
AUDIT_NAVIGATION = (("audit-log", "Audit log"),)


def navigation(request: HttpRequest) -> dict[str, object]:
    user = getattr(request, "user", None)
    audit = AUDIT_NAVIGATION if user is not None and reads_audit_log(user) else ()
    return {
        "navigation": NAVIGATION + audit,
        "user_roles": sorted(user_roles(request.user)) if hasattr(request, "user") else [],
    }
