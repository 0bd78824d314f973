"""Filters that name a tenant or a trust class (DESIGN §8), for every app's FilterSets: by
slug, name or id, and refused with a 400 when they name none the user may see."""

from __future__ import annotations

from typing import Any

from gpuposture.base.filters import NamedFilter
from tenants.models import Tenant, TrustClass


def tenant_filter(path: str = "tenant", **kwargs: Any) -> NamedFilter:
    kwargs.setdefault("label", "Tenant (slug, name or id)")
    return NamedFilter(
        path=path,
        model=Tenant,
        names=("slug", "name"),
        noun="tenant",
        listing="GET /api/v1/tenants/",
        **kwargs,
    )


def trust_class_filter(**kwargs: Any) -> NamedFilter:
    kwargs.setdefault("label", "Trust class (slug, name or id, e.g. external)")
    return NamedFilter(
        path="trust_class",
        model=TrustClass,
        names=("slug", "name"),
        noun="trust class",
        listing="GET /api/v1/trust-classes/",
        **kwargs,
    )
