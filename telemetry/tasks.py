"""Celery tasks for telemetry: thin wrappers over telemetry.services and telemetry.rollup
(STYLE rule 3)."""

from __future__ import annotations

from celery import shared_task

from telemetry import queue
from telemetry.rollup import telemetry_rollup
from telemetry.services import telemetry_sources_read_due


@shared_task(name=queue.READ_TELEMETRY_SOURCES, acks_late=True)
def read_telemetry_sources() -> dict[str, object]:
    """Read every cluster's telemetry source that is due (beat runs this every minute)."""
    read, failed = telemetry_sources_read_due()
    return {"read": read, "failed": failed}


@shared_task(name=queue.ROLLUP_TELEMETRY, acks_late=True)
def rollup_telemetry() -> dict[str, object]:
    result = telemetry_rollup()
    return {"hours": result.hours, "rows": result.rows, "deleted": result.deleted}
