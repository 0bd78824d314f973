"""Sharing-request pages: the list, asking, one request and its decision, the approvals queue."""

from __future__ import annotations

from django.urls import path

from sharing import views

urlpatterns = [
    path("sharing-requests/", views.sharing_request_list, name="sharing-request-list"),
    path("sharing-requests/new/", views.sharing_request_new, name="sharing-request-new"),
    path("sharing-requests/<int:pk>/", views.sharing_request_detail, name="sharing-request-detail"),
    path(
        "sharing-requests/<int:pk>/decide/",
        views.sharing_request_decide,
        name="sharing-request-decide",
    ),
    path("approvals/", views.approvals_queue, name="approvals-queue"),
]
