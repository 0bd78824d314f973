from __future__ import annotations

from django.apps import AppConfig


class BaseConfig(AppConfig):
    name = "gpuposture.base"
    label = "gpuposture_base"
    verbose_name = "gpuposture base"

    def ready(self) -> None:
        from django.contrib.auth.signals import user_logged_in

        from gpuposture.base.sessions import stamp_session_at_login

        user_logged_in.connect(stamp_session_at_login, dispatch_uid="gpuposture.session_stamp")
