"""URL wiring: pages, the API under /api/v1/, its schema and docs, login, health."""

from __future__ import annotations

from allauth.account.decorators import secure_admin_login
from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from audit import views as audit_views
from enforcement.views import enforcement_page
from gpuposture.base.views import healthz, readyz
from gpuposture.metrics import metrics
from inventory import bulletin_views, mig_views
from inventory import views as inventory_views
from inventory.vex import views as vex_views
from posture import finding_views, homes, tenant_list
from posture import views as posture_views
from posture.sharing_context import sharing_request_context
from providers import views as provider_views
from telemetry import views as telemetry_views
from tenants import views as tenant_views

# The admin signs in through allauth's login, so its two-factor step and rate limits apply.
admin.site.login = secure_admin_login(admin.site.login)

urlpatterns = [
    path("", posture_views.overview, name="overview"),
    path("home/", homes.home, name="home"),
    path("tenants/", tenant_list.tenant_list, name="tenant-list"),
    path("tenants/<slug:slug>/", posture_views.tenant_detail, name="tenant-detail"),
    path("findings/", finding_views.finding_list, name="finding-list"),
    path("findings/accept/", finding_views.finding_bulk_accept_view, name="finding-bulk-accept"),
    path("findings/<int:pk>/", finding_views.finding_detail, name="finding-detail"),
    path("findings/<int:pk>/accept/", finding_views.finding_accept_view, name="finding-accept"),
    path("findings/<int:pk>/reopen/", finding_views.finding_reopen_view, name="finding-reopen"),
    path("findings/<int:pk>/triage/", finding_views.finding_triage_view, name="finding-triage"),
    path("checks/", posture_views.check_list, name="check-list"),
    path("checks/frameworks/", posture_views.frameworks, name="check-frameworks"),
    path("checks/<str:check_id>/", posture_views.check_detail, name="check-detail"),
    path("clusters/", inventory_views.cluster_list, name="cluster-list"),
    path("clusters/new/", inventory_views.cluster_edit, name="cluster-create"),
    path("clusters/<str:name>/", posture_views.cluster_detail, name="cluster-detail"),
    path("clusters/<str:name>/edit/", inventory_views.cluster_edit, name="cluster-edit"),
    path("clusters/<str:name>/sync/", inventory_views.cluster_sync_now, name="cluster-sync"),
    path("clusters/<str:name>/vex/", vex_views.cluster_vex, name="cluster-vex"),
    path("nodes/", inventory_views.node_list, name="node-list"),
    path("nodes/<str:cluster>/<str:name>/", inventory_views.node_detail, name="node-detail"),
    path("patch/", inventory_views.patch_status, name="patch-status"),
    path("patch/sla/", inventory_views.patch_sla_edit, name="patch-sla"),
    path("mig/", mig_views.mig_partitioner, name="mig-partitioner"),
    path("enforcement/", enforcement_page, name="enforcement"),
    path("utilisation/", telemetry_views.utilisation, name="utilisation"),
    path("utilisation/chargeback.csv", telemetry_views.chargeback_csv, name="utilisation-csv"),
    path("resets/new/", telemetry_views.reset_attestation_create, name="reset-create"),
    path("sharing-requests/", tenant_views.sharing_request_list, name="sharing-request-list"),
    path("sharing-requests/new/", tenant_views.sharing_request_new, name="sharing-request-new"),
    path(
        "sharing-requests/<int:pk>/",
        tenant_views.sharing_request_detail,
        {"extra": sharing_request_context},
        name="sharing-request-detail",
    ),
    path(
        "sharing-requests/<int:pk>/decide/",
        tenant_views.sharing_request_decide,
        {"extra": sharing_request_context},
        name="sharing-request-decide",
    ),
    path("approvals/", tenant_views.approvals_queue, name="approvals-queue"),
    path("providers/", provider_views.provider_list, name="provider-list"),
    path("providers/new/", provider_views.provider_edit, name="provider-create"),
    path("providers/compare/", provider_views.provider_compare, name="provider-compare"),
    path("providers/<slug:slug>/", provider_views.provider_detail, name="provider-detail"),
    path("providers/<slug:slug>/edit/", provider_views.provider_edit, name="provider-edit"),
    path(
        "providers/<slug:slug>/assessments/new/",
        provider_views.assessment_new,
        name="assessment-new",
    ),
    path("assessments/<int:pk>/", provider_views.assessment_detail, name="assessment-detail"),
    path("assessments/<int:pk>/save/", provider_views.assessment_save, name="assessment-save"),
    path(
        "assessments/<int:pk>/submit/",
        provider_views.assessment_submit_view,
        name="assessment-submit",
    ),
    path(
        "assessments/<int:pk>/review/",
        provider_views.assessment_review_view,
        name="assessment-review",
    ),
    path("assessments/<int:pk>/print/", provider_views.assessment_print, name="assessment-print"),
    path(
        "assessments/<int:pk>/export.<str:fmt>",
        provider_views.assessment_download,
        name="assessment-download",
    ),
    path(
        "assessments/<int:pk>/import/", provider_views.assessment_import, name="assessment-import"
    ),
    path(
        "assessments/<int:pk>/evidence/<int:file_id>/",
        provider_views.evidence_download,
        name="evidence-download",
    ),
    path(
        "assessments/<int:pk>/evidence/<int:file_id>/remove/",
        provider_views.evidence_remove_view,
        name="evidence-remove",
    ),
    path("bulletins/", inventory_views.bulletin_list, name="bulletin-list"),
    path("bulletins/import/", inventory_views.bulletin_import_view, name="bulletin-import"),
    path("bulletins/<int:pk>/", inventory_views.bulletin_detail, name="bulletin-detail"),
    path("bulletins/<int:pk>/delete/", bulletin_views.bulletin_delete_view, name="bulletin-delete"),
    path("bulletins/revisions/<int:pk>/", bulletin_views.revision_detail, name="bulletin-revision"),
    path(
        "bulletins/revisions/<int:pk>/decide/",
        bulletin_views.revision_decide,
        name="bulletin-revision-decide",
    ),
    path("audit/", audit_views.audit_log, name="audit-log"),
    path("api/v1/", include(("gpuposture.api_urls", "api"), namespace="api")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # The split view serves its start-up script as a file: no inline script for the CSP to allow.
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="swagger-ui"),
    path("account/notifications/", include("notifications.urls")),
    path("account/", include("accounts.urls")),
    path("accounts/", include("allauth.urls")),
    path("admin/", admin.site.urls),
    path("healthz", healthz, name="healthz"),
    path("metrics", metrics, name="metrics"),
    path("readyz", readyz, name="readyz"),
]
