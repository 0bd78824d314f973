"""Posture's API routes (the viewsets go on the one router in gpuposture/api_urls.py)."""

from __future__ import annotations

from django.urls import path
from rest_framework.routers import SimpleRouter

from posture.action_api import ActionViewSet
from posture.api import CheckViewSet, ClusterChecklistView, FindingViewSet, TenantPostureViewSet

router = SimpleRouter()
router.register("tenants", TenantPostureViewSet, basename="tenant")
router.register("findings", FindingViewSet)
router.register("checks", CheckViewSet, basename="check")
router.register("actions", ActionViewSet)

urlpatterns = [
    path(
        "clusters/<str:name>/checklist/",
        ClusterChecklistView.as_view(),
        name="cluster-checklist",
    ),
]
