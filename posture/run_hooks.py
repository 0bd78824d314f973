"""What happens after every posture run, for apps above posture (imports go one way).

`rescore_now` is the one function every score goes through (CLI, demo, tasks); when it has
stored a run it calls each listener registered here with that run. An app that needs to act
on a fresh run (notifications sends its digests) registers a plain function from its
AppConfig.ready(): a call, not a task named by a string. A listener that fails is logged and
never fails the score that called it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from posture.models import PostureRun

logger = logging.getLogger(__name__)

RunListener = Callable[[PostureRun], object]
_listeners: dict[str, RunListener] = {}


def run_listener_register(name: str, listener: RunListener) -> None:
    """Call `listener(run)` after each posture run; a second registration under `name`
    replaces the first (ready() may run twice in tests)."""
    _listeners[name] = listener


def run_listeners_notify(run: PostureRun) -> None:
    for name, listener in list(_listeners.items()):
        try:
            listener(run)
        except Exception:
            # The score is stored and correct; what follows it must not turn it into a failure.
            logger.exception("after-run listener %s failed for posture run %s", name, run.pk)
