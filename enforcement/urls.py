"""Enforcement page: the admission policy packs."""

from __future__ import annotations

from django.urls import path

from enforcement.views import enforcement_page

urlpatterns = [
    path("enforcement/", enforcement_page, name="enforcement"),
]
