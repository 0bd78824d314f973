"""The REST API under /api/v1/ (DESIGN §8)."""

from __future__ import annotations

from django.urls import path
from rest_framework.routers import DefaultRouter

from audit.api import AuditEventViewSet
from enforcement.api import PolicyPackPreviewView, PolicyPackView
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
from inventory.mig_api import MigNodeLayoutView, MigValidateView
from inventory.vex.api import ClusterVexView
from posture.action_api import ActionViewSet
from posture.api import (
    CheckViewSet,
    ClusterChecklistView,
    FindingViewSet,
    TenantPostureViewSet,
)
from providers.api import AssessmentViewSet, ProviderViewSet, QuestionnaireViewSet
from telemetry.api import ResetAttestationViewSet, UtilisationView
from tenants.api import SharingRequestViewSet, TrustClassViewSet

# No `.json` twins of every route: JSON is the only renderer, `?format=` names an export
# format, and the twins passed `format` to actions that take no such argument (a 500).
router = DefaultRouter()
router.include_format_suffixes = False
router.register("trust-classes", TrustClassViewSet)
router.register("tenants", TenantPostureViewSet, basename="tenant")
router.register("clusters", ClusterViewSet)
router.register("sync-runs", SyncRunViewSet)
router.register("drift-events", DriftEventViewSet)
router.register("bulletins", BulletinViewSet)
router.register("bulletin-imports", BulletinImportViewSet)
router.register("bulletin-revisions", BulletinRevisionViewSet)
router.register("nodes", NodeViewSet)
router.register("workloads", WorkloadViewSet)
router.register("findings", FindingViewSet)
router.register("checks", CheckViewSet, basename="check")
router.register("actions", ActionViewSet)
router.register("reset-attestations", ResetAttestationViewSet)
router.register("audit-events", AuditEventViewSet)
router.register("sharing-requests", SharingRequestViewSet)
router.register("providers", ProviderViewSet)
router.register("questionnaires", QuestionnaireViewSet)
router.register("assessments", AssessmentViewSet)

urlpatterns = [
    path("patch-sla/", PatchSlaView.as_view(), name="api-patch-sla"),
    path("utilisation/", UtilisationView.as_view(), name="api-utilisation"),
    path("mig/validate/", MigValidateView.as_view(), name="api-mig-validate"),
    path("mig/node-layout/", MigNodeLayoutView.as_view(), name="api-mig-node-layout"),
    path(
        "clusters/<str:name>/checklist/",
        ClusterChecklistView.as_view(),
        name="cluster-checklist",
    ),
    path("clusters/<str:name>/vex/", ClusterVexView.as_view(), name="cluster-vex"),
    path(
        "clusters/<str:name>/policy-pack/",
        PolicyPackView.as_view(),
        name="cluster-policy-pack",
    ),
    path(
        "clusters/<str:name>/policy-pack/preview/",
        PolicyPackPreviewView.as_view(),
        name="cluster-policy-pack-preview",
    ),
    *router.urls,
]
