"""Reads of the tenant registry that other apps' read models take."""

from __future__ import annotations

from django.conf import settings

from tenants.models import TrustClass
from tenants.pool_taints import PoolTaintRules


def pool_taint_rules() -> PoolTaintRules:
    """GPUPOSTURE_POOL_TAINT_KEYS and every class's exact pool taints (one query)."""
    exact = {
        slug: tuple(taints)
        for slug, taints in TrustClass.objects.values_list("slug", "pool_taints")
        if taints
    }
    return PoolTaintRules(keys=tuple(settings.GPUPOSTURE_POOL_TAINT_KEYS), exact=exact)
