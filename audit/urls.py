"""Audit page: the event log."""

from __future__ import annotations

from django.urls import path

from audit import views

urlpatterns = [
    path("audit/", views.audit_log, name="audit-log"),
]
