"""Notifications' work for the task queue: the one place its task names are written and its
tasks are sent. The tasks module is not imported (it imports notifications.delivery), the task
is found by name (gpuposture.base.queue)."""

from __future__ import annotations

from gpuposture.base.queue import enqueue, task_named

DELIVER = "notifications.tasks.deliver"
NOTIFICATION_CHECKS = "notifications.tasks.notification_checks"


def enqueue_delivery(*, delivery_id: int, countdown: float | None = None) -> None:
    """Queue one attempt at a delivery; raises QueueUnavailable."""
    enqueue(task_named(DELIVER), delivery_id, what="the notification", countdown=countdown)
