"""Inventory's API routes (the viewsets go on the one router in gpuposture/api_urls.py)."""

from __future__ import annotations

from django.urls import path
from rest_framework.routers import SimpleRouter

from inventory.api import (
    ClusterViewSet,
    DriftEventViewSet,
    NodeViewSet,
    SyncRunViewSet,
    WorkloadViewSet,
)
from inventory.bulletins.api import BulletinImportViewSet, BulletinViewSet
from inventory.bulletins.revision_api import BulletinRevisionViewSet
from inventory.bulletins.vex.api import ClusterVexView
from inventory.gpu_api import GpuViewSet
from inventory.patching.api import PatchSlaView

router = SimpleRouter()
router.register("clusters", ClusterViewSet)
router.register("sync-runs", SyncRunViewSet)
router.register("drift-events", DriftEventViewSet)
router.register("bulletins", BulletinViewSet)
router.register("bulletin-imports", BulletinImportViewSet)
router.register("bulletin-revisions", BulletinRevisionViewSet)
router.register("nodes", NodeViewSet)
router.register("workloads", WorkloadViewSet)
router.register("gpus", GpuViewSet, basename="gpu")

urlpatterns = [
    path("patch-sla/", PatchSlaView.as_view(), name="api-patch-sla"),
    path("clusters/<str:name>/vex/", ClusterVexView.as_view(), name="cluster-vex"),
]
