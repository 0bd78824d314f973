"""Sharing requests' API routes (registered on the one router in gpuposture/api_urls.py)."""

from __future__ import annotations

from rest_framework.routers import SimpleRouter

from sharing.api import SharingRequestViewSet

router = SimpleRouter()
router.register("sharing-requests", SharingRequestViewSet)

urlpatterns: list = []
