"""Enforcement's API routes: a cluster's admission policy pack and its preview."""

from __future__ import annotations

from django.urls import path
from rest_framework.routers import SimpleRouter

from enforcement.api import PolicyPackPreviewView, PolicyPackView

router = SimpleRouter()

urlpatterns = [
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
]
