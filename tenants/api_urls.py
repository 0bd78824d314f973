"""Tenants' API routes (registered on the one router in gpuposture/api_urls.py)."""

from __future__ import annotations

from rest_framework.routers import SimpleRouter

from tenants.api import TrustClassViewSet

router = SimpleRouter()
router.register("trust-classes", TrustClassViewSet)

urlpatterns: list = []
