"""Startup checks of the tenant settings against the registry."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import Error, register
from django.db import DatabaseError

from tenants.mapping import PLATFORM_CLASS


@register()
def unclassified_class_check(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    """GPUPOSTURE_UNCLASSIFIED_CLASS must name a trust class: otherwise namespaces no tenant
    claims could not be judged at all. Skipped before the classes exist (a fresh database,
    `migrate` itself), where the seed migration brings the default `external`."""
    from tenants.models import TrustClass  # models load after the checks register

    slug = settings.GPUPOSTURE_UNCLASSIFIED_CLASS
    if slug == PLATFORM_CLASS:
        return [
            Error(
                f"GPUPOSTURE_UNCLASSIFIED_CLASS={slug!r} would judge namespaces nobody owns as "
                "the platform's (any sharing mode with anyone): nothing unknown is trusted so",
                hint="Use external (the default) or another class of real tenants.",
                id="gpuposture.E102",
            )
        ]
    try:
        known = set(TrustClass.objects.values_list("slug", flat=True))
    except DatabaseError:
        return []
    if not known or slug in known:
        return []
    return [
        Error(
            f"GPUPOSTURE_UNCLASSIFIED_CLASS={slug!r} names no trust class",
            hint=f"Use one of: {', '.join(sorted(known))}.",
            id="gpuposture.E101",
        )
    ]
