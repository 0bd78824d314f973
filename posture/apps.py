from __future__ import annotations

from django.apps import AppConfig


class PostureConfig(AppConfig):
    name = "posture"

    def ready(self) -> None:
        from gpuposture.base.rescore import dispatcher_register
        from posture.rescore import rescore_dispatch

        # Every app asks for re-scores through gpuposture.base.rescore (the lowest layer);
        # posture, which knows how to score, answers them.
        dispatcher_register(rescore_dispatch)
