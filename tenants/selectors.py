"""Reads of the tenant registry that other apps' read models take."""

from __future__ import annotations

from django.conf import settings

from tenants.models import TrustClass
from tenants.pool_taints import PoolTaintRules


def pool_taint_rules() -> PoolTaintRules:
    """GPUPOSTURE_POOL_TAINT_KEYS, every class's exact pool taints and every class's slug (a
    keyed taint's value must name one), in one query."""
    rows = list(TrustClass.objects.values_list("slug", "pool_taints"))
    exact = {slug: tuple(taints) for slug, taints in rows if taints}
    return PoolTaintRules(
        keys=tuple(settings.GPUPOSTURE_POOL_TAINT_KEYS),
        exact=exact,
        classes=frozenset(slug for slug, _taints in rows),
    )
