"""Inventory's work for the task queue: the one place its task names are written and its
tasks are sent. Services call these from `transaction.on_commit`; the tasks module is not
imported (it imports the services), the task is found by name (gpuposture.base.queue)."""

from __future__ import annotations

from gpuposture.base.queue import enqueue, task_named

SYNC_CLUSTER = "inventory.tasks.sync_cluster"
IMPORT_BULLETIN_URLS = "inventory.tasks.import_bulletin_urls"
POLL_BULLETIN_FEEDS = "inventory.tasks.poll_bulletin_feeds"


def enqueue_sync(*, cluster_id: int, trigger: str, run_id: int) -> None:
    """Queue the sync of a cluster into the run already recorded; raises QueueUnavailable."""
    enqueue(task_named(SYNC_CLUSTER), cluster_id, trigger=trigger, run_id=run_id, what="the sync")


def enqueue_bulletin_import(*, import_id: int) -> None:
    """Queue a recorded URL import; raises QueueUnavailable."""
    enqueue(task_named(IMPORT_BULLETIN_URLS), import_id, what="the import")
