"""Reads of scores and findings that sweep for what expired first, where no worker runs.

With Celery eager (the demo, one process) no beat sweeps for what time alone expired (a risk
acceptance, a sharing approval, a questionnaire past its date: posture.rescore_due), so the
pages and API lists that show scores, findings or actions sweep before they read
(posture.rescore.rescore_expired_when_eager: a few small queries, a re-score only where
something expired since the last score). On a worker, beat's sweep does it."""

from __future__ import annotations

from typing import Any

from posture.rescore import rescore_expired_when_eager

READS = ("GET", "HEAD")


class SweepsBeforeReading:
    """For a DRF view: a read sweeps first (writes re-score on their own commit)."""

    def initial(self, request: Any, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)  # the view's own (DRF APIView)
        if request.method in READS:
            rescore_expired_when_eager()
