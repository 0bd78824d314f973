"""Handing work to the task queue from a request. When the broker (Redis) is unreachable the
caller learns it within about a second, with a message a person can act on, instead of a
request that hangs on reconnects and ends in a 500. Celery itself is not imported here (only
tasks and gpuposture.celery may): the task or signature is passed in, or named, and then found
through the lookup gpuposture.celery registers (`task_lookup_register`). Naming tasks is how
each app's queue module (`<app>/queue.py`) sends work without importing its tasks module, which
imports the app's services: importing it would close a circle services -> tasks -> services."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

from kombu.exceptions import OperationalError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

logger = logging.getLogger(__name__)

# Three tries about half a second apart; each connect is bounded by the broker's
# socket_connect_timeout (settings), so a refused or silent broker fails well inside 10 s.
PUBLISH_RETRY_POLICY = {
    "max_retries": 2,
    "interval_start": 0,
    "interval_step": 0.5,
    "interval_max": 0.5,
}
BROKER_ERRORS = (OperationalError, RedisConnectionError, RedisTimeoutError)


class QueueUnavailable(Exception):
    """The task queue could not take the task; nothing was queued. `record` is the row the
    caller kept for the refused work (a failed sync run), if any."""

    record: Any = None

    def __init__(self, what: str) -> None:
        super().__init__(
            f"The task queue is unreachable; {what} was not started. Try again when Redis is back."
        )


class Enqueueable(Protocol):
    """A Celery task or signature."""

    def apply_async(self, args: Any = ..., kwargs: Any = ..., **options: Any) -> Any: ...


TaskLookup = Callable[[str], Enqueueable]
_lookup: list[TaskLookup] = []


def task_lookup_register(lookup: TaskLookup) -> None:
    """gpuposture.celery registers how a task name becomes the task (its app's registry)."""
    _lookup[:] = [lookup]


def task_named(name: str) -> Enqueueable:
    """The task registered under `name` ("inventory.tasks.sync_cluster")."""
    if not _lookup:
        raise RuntimeError(f"no task lookup registered (gpuposture.celery not loaded): {name}")
    return _lookup[0](name)


def enqueue(
    task: Enqueueable, *args: Any, what: str, countdown: float | None = None, **kwargs: Any
) -> None:
    """Queue `task(*args, **kwargs)`, or raise QueueUnavailable naming `what` ("the sync").
    The result is not kept: callers follow a row (a sync run, an import), and a result
    subscription would make the request wait on the result store's own reconnects.
    `countdown`: run no sooner than this many seconds from now (ignored when eager)."""
    try:
        task.apply_async(
            args,
            kwargs,
            ignore_result=True,
            retry=True,
            retry_policy=PUBLISH_RETRY_POLICY,
            countdown=countdown,
        )
    except BROKER_ERRORS as exc:
        logger.warning("task queue unreachable, %s was not started: %s", what, exc)
        raise QueueUnavailable(what) from exc
