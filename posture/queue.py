"""Posture's work for the task queue: the one place its task names are written and its tasks
are sent. A re-score is asked for through gpuposture.base.rescore.rescore_request; the
dispatcher (posture.rescore) sends it from here. The tasks module is not imported (it imports
posture.rescore), the task is found by name (gpuposture.base.queue)."""

from __future__ import annotations

from gpuposture.base.queue import enqueue, task_named

SCORE = "posture.tasks.score"
RESCORE = "posture.tasks.rescore"
RESCORE_SWEEP = "posture.tasks.rescore_sweep"


def enqueue_rescore(*, cluster_ids: list[int], countdown: float) -> None:
    """Queue the debounced re-score of clusters already marked pending; raises
    QueueUnavailable."""
    enqueue(task_named(RESCORE), cluster_ids, what="the re-score", countdown=countdown)
