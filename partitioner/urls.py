"""The MIG partitioner's page."""

from __future__ import annotations

from django.urls import path

from partitioner import views

urlpatterns = [
    path("mig/", views.mig_partitioner, name="mig-partitioner"),
]
