"""Providers' API routes (registered on the one router in gpuposture/api_urls.py)."""

from __future__ import annotations

from rest_framework.routers import SimpleRouter

from providers.api import AssessmentViewSet, ProviderViewSet, QuestionnaireViewSet

router = SimpleRouter()
router.register("providers", ProviderViewSet)
router.register("questionnaires", QuestionnaireViewSet)
router.register("assessments", AssessmentViewSet)

urlpatterns: list = []
