"""Posture pages: the overview, homes, tenants, findings, checks, one cluster's posture."""

from __future__ import annotations

from django.urls import path

from posture import finding_views, homes, tenant_list, views

urlpatterns = [
    path("", views.overview, name="overview"),
    path("home/", homes.home, name="home"),
    path("tenants/", tenant_list.tenant_list, name="tenant-list"),
    path("tenants/<slug:slug>/", views.tenant_detail, name="tenant-detail"),
    path("findings/", finding_views.finding_list, name="finding-list"),
    path("findings/accept/", finding_views.finding_bulk_accept_view, name="finding-bulk-accept"),
    path("findings/<int:pk>/", finding_views.finding_detail, name="finding-detail"),
    path("findings/<int:pk>/accept/", finding_views.finding_accept_view, name="finding-accept"),
    path("findings/<int:pk>/reopen/", finding_views.finding_reopen_view, name="finding-reopen"),
    path("findings/<int:pk>/triage/", finding_views.finding_triage_view, name="finding-triage"),
    path("checks/", views.check_list, name="check-list"),
    path("checks/frameworks/", views.frameworks, name="check-frameworks"),
    path("checks/<str:check_id>/", views.check_detail, name="check-detail"),
    # After inventory's routes (gpuposture/urls.py): `clusters/new/` is not a cluster's name.
    path("clusters/<str:name>/", views.cluster_detail, name="cluster-detail"),
]
