"""Template context shared by every page: navigation and the user's roles."""

from __future__ import annotations

from django.http import HttpRequest

from gpuposture.base.roles import user_roles

NAVIGATION = (
    ("overview", "Overview"),
    ("finding-list", "Findings"),
    ("check-list", "Checks"),
    ("cluster-list", "Clusters"),
    ("node-list", "Nodes"),
    ("patch-status", "Patching"),
    ("utilisation", "Utilisation"),
    ("mig-partitioner", "MIG"),
    ("bulletin-list", "Bulletins"),
)


def navigation(request: HttpRequest) -> dict[str, object]:
    return {
        "navigation": NAVIGATION,
        "user_roles": sorted(user_roles(request.user)) if hasattr(request, "user") else [],
    }
