"""Provider pages: providers, their comparison, assessments and their evidence."""

from __future__ import annotations

from django.urls import path

from providers import views

urlpatterns = [
    path("providers/", views.provider_list, name="provider-list"),
    path("providers/new/", views.provider_edit, name="provider-create"),
    path("providers/compare/", views.provider_compare, name="provider-compare"),
    path("providers/<slug:slug>/", views.provider_detail, name="provider-detail"),
    path("providers/<slug:slug>/edit/", views.provider_edit, name="provider-edit"),
    path("providers/<slug:slug>/assessments/new/", views.assessment_new, name="assessment-new"),
    path("assessments/<int:pk>/", views.assessment_detail, name="assessment-detail"),
    path("assessments/<int:pk>/save/", views.assessment_save, name="assessment-save"),
    path("assessments/<int:pk>/submit/", views.assessment_submit_view, name="assessment-submit"),
    path("assessments/<int:pk>/review/", views.assessment_review_view, name="assessment-review"),
    path("assessments/<int:pk>/print/", views.assessment_print, name="assessment-print"),
    path(
        "assessments/<int:pk>/export.<str:fmt>",
        views.assessment_download,
        name="assessment-download",
    ),
    path("assessments/<int:pk>/import/", views.assessment_import, name="assessment-import"),
    path(
        "assessments/<int:pk>/evidence/<int:file_id>/",
        views.evidence_download,
        name="evidence-download",
    ),
    path(
        "assessments/<int:pk>/evidence/<int:file_id>/remove/",
        views.evidence_remove_view,
        name="evidence-remove",
    ),
]
