"""urllib3's one retry of a 429 or 503 for the API client, with the server's wait capped."""

from __future__ import annotations

from typing import Any

from urllib3.util.retry import Retry

# Longest wait on a server's Retry-After before the one retry: a sync waits with its lease
# unrenewed (GPUPOSTURE_SYNC_LEASE_SECONDS, 300 by default), and a gateway in front of a managed
# API may ask for minutes. Still refused after it, the run fails and Celery retries with backoff.
RETRY_AFTER_CAP_SECONDS = 30.0


class CappedRetry(Retry):
    """urllib3's one retry of a 429 or 503, waiting what the server asks but never longer than
    RETRY_AFTER_CAP_SECONDS."""

    def get_retry_after(self, response: Any) -> float | None:
        seconds = super().get_retry_after(response)
        return None if seconds is None else min(seconds, RETRY_AFTER_CAP_SECONDS)


def one_retry() -> Retry:
    """As `retries = 1` (urllib3's Retry.from_int), with the server's wait capped."""
    return CappedRetry(1, redirect=None)
