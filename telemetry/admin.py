from __future__ import annotations

from django.contrib import admin

from telemetry.models import ResetAttestation, TelemetrySource


@admin.register(TelemetrySource)
class TelemetrySourceAdmin(admin.ModelAdmin):
    list_display = ("cluster", "kind", "url", "interval_minutes", "last_read_at", "last_error")


@admin.register(ResetAttestation)
class ResetAttestationAdmin(admin.ModelAdmin):
    list_display = ("reset_at", "cluster", "node", "gpu_uuid", "method", "recorded_by")
    list_filter = ("method", "cluster")
