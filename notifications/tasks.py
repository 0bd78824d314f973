"""Celery tasks for notifications: thin wrappers over notifications.delivery and .digest."""

from __future__ import annotations

from celery import shared_task

from notifications import queue
from notifications.delivery import deliveries_sweep, delivery_attempt
from notifications.digest import digests_send


@shared_task(name=queue.DELIVER, bind=True, acks_late=True, max_retries=None)
def deliver(self, delivery_id: int) -> dict[str, object]:
    """One attempt; a transient failure schedules the next after the backoff step the
    delivery has reached (the row counts attempts, so the schedule survives redelivery)."""
    outcome = delivery_attempt(delivery_id=delivery_id)
    if outcome is None:
        return {"status": "skipped", "reason": "gone, done or claimed"}
    if outcome.retry_in is not None and not self.request.is_eager:
        raise self.retry(countdown=outcome.retry_in)
    # Run in-process (no broker, `make demo`) a retry would block the caller: the row waits
    # as "retrying" and beat's sweep (deliveries_sweep) sends it again when due.
    return {"status": outcome.status, "retry_in": outcome.retry_in}


@shared_task(name=queue.NOTIFICATION_CHECKS, acks_late=True)
def notification_checks() -> dict[str, object]:
    """On beat: digests of what time moved (stale syncs, pending approvals, expiring
    acceptances, renewals), and deliveries whose task was lost."""
    created = digests_send(trigger="periodic checks")
    return {"status": "done", "deliveries": created, "requeued": len(deliveries_sweep())}
