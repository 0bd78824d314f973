"""Telemetry sources and reset attestations in the admin: changes are audit events, and an
attestation's recorder is the signed-in user, never typed in."""

from __future__ import annotations

from django.contrib import admin

from audit.admin import AuditedModelAdmin
from telemetry.models import ResetAttestation, TelemetrySource


@admin.register(TelemetrySource)
class TelemetrySourceAdmin(AuditedModelAdmin):
    list_display = (
        "cluster",
        "kind",
        "url",
        "match",
        "interval_minutes",
        "last_read_at",
        "last_error",
    )


@admin.register(ResetAttestation)
class ResetAttestationAdmin(AuditedModelAdmin):
    list_display = ("reset_at", "cluster", "node", "gpu_uuid", "method", "recorded_by")
    list_filter = ("method", "cluster")
    creator_fields = ("recorded_by",)
