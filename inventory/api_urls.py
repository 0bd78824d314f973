"""Inventory's API routes (the viewsets go on the one router in gpuposture/api_urls.py)."""

from __future__ import annotations

from django.urls import path
from rest_framework.routers import SimpleRouter

from inventory.api import (
    BulletinImportViewSet,
    BulletinViewSet,
    ClusterViewSet,
    DriftEventViewSet,
    NodeViewSet,
    SyncRunViewSet,
    WorkloadViewSet,
)
from inventory.api_patch import PatchSlaView
from inventory.api_revisions import BulletinRevisionViewSet
from inventory.vex.api import ClusterVexView

router = SimpleRouter()
router.register("clusters", ClusterViewSet)
router.register("sync-runs", SyncRunViewSet)
router.register("drift-events", DriftEventViewSet)
router.register("bulletins", BulletinViewSet)
router.register("bulletin-imports", BulletinImportViewSet)
router.register("bulletin-revisions", BulletinRevisionViewSet)
router.register("nodes", NodeViewSet)
router.register("workloads", WorkloadViewSet)

urlpatterns = [
    path("patch-sla/", PatchSlaView.as_view(), name="api-patch-sla"),
    path("clusters/<str:name>/vex/", ClusterVexView.as_view(), name="cluster-vex"),
]
