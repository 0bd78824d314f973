from __future__ import annotations

from django.apps import AppConfig


class PostureConfig(AppConfig):
    name = "posture"

    def ready(self) -> None:
        # Register the tasks with the Celery app in every process (web and CLI too), so a
        # task named by another app (a score after a sync) runs in-process without a broker.
        from gpuposture.base.rescore import dispatcher_register
        from posture import tasks  # noqa: F401
        from posture.rescore import rescore_dispatch

        # Every app asks for re-scores through gpuposture.base.rescore (the lowest layer);
        # posture, which knows how to score, answers them.
        dispatcher_register(rescore_dispatch)
