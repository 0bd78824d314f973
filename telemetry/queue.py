"""Telemetry's task names, the one place they are written (beat sends both; nothing else
enqueues telemetry work)."""

from __future__ import annotations

READ_TELEMETRY_SOURCES = "telemetry.tasks.read_telemetry_sources"
ROLLUP_TELEMETRY = "telemetry.tasks.rollup_telemetry"
