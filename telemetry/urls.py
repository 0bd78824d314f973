"""Telemetry pages: utilisation, its chargeback CSV, reset attestations."""

from __future__ import annotations

from django.urls import path

from telemetry import views

urlpatterns = [
    path("utilisation/", views.utilisation, name="utilisation"),
    path("utilisation/chargeback.csv", views.chargeback_csv, name="utilisation-csv"),
    path("resets/new/", views.reset_attestation_create, name="reset-create"),
]
