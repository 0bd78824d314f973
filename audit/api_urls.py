"""Audit's API routes (registered on the one router in gpuposture/api_urls.py)."""

from __future__ import annotations

from rest_framework.routers import SimpleRouter

from audit.api import AuditEventViewSet

router = SimpleRouter()
router.register("audit-events", AuditEventViewSet)

urlpatterns: list = []
