"""Telemetry's API routes (the viewsets go on the one router in gpuposture/api_urls.py)."""

from __future__ import annotations

from django.urls import path
from rest_framework.routers import SimpleRouter

from telemetry.api import ResetAttestationViewSet, UtilisationView

router = SimpleRouter()
router.register("reset-attestations", ResetAttestationViewSet)

urlpatterns = [
    path("utilisation/", UtilisationView.as_view(), name="api-utilisation"),
]
