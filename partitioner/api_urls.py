"""The MIG partitioner's API: validate a layout, read a node's layout."""

from __future__ import annotations

from django.urls import path
from rest_framework.routers import SimpleRouter

from partitioner.api import MigNodeLayoutView, MigValidateView

router = SimpleRouter()

urlpatterns = [
    path("mig/validate/", MigValidateView.as_view(), name="api-mig-validate"),
    path("mig/node-layout/", MigNodeLayoutView.as_view(), name="api-mig-node-layout"),
]
