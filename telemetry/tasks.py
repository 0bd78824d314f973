"""Celery tasks for telemetry: thin wrappers over telemetry.services (STYLE rule 3)."""

from __future__ import annotations

import logging

from celery import shared_task
from django.utils import timezone

from telemetry import queue
from telemetry.models import TelemetrySource
from telemetry.services import TelemetryError, telemetry_rollup, telemetry_source_read

logger = logging.getLogger(__name__)


@shared_task(name=queue.READ_TELEMETRY_SOURCES, acks_late=True)
def read_telemetry_sources() -> dict[str, object]:
    """Read every cluster's telemetry source that is due (beat runs this every minute)."""
    now = timezone.now()
    read, failed = 0, 0
    for source in TelemetrySource.objects.select_related("cluster"):
        due = source.last_read_at is None or (
            (now - source.last_read_at).total_seconds() >= source.interval_minutes * 60
        )
        if not due:
            continue
        try:
            telemetry_source_read(source=source)
            read += 1
        except TelemetryError as exc:  # recorded on the source; the others still run
            logger.warning("telemetry of %s: %s", source.cluster.name, exc)
            failed += 1
    return {"read": read, "failed": failed}


@shared_task(name=queue.ROLLUP_TELEMETRY, acks_late=True)
def rollup_telemetry() -> dict[str, object]:
    result = telemetry_rollup()
    return {"hours": result.hours, "rows": result.rows, "deleted": result.deleted}
